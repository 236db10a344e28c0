"""The ClickHouse store (``--db clickhouse://HOST:9000/DATABASE[?cluster=NAME]``): URL, schema and
migrations, the Arrow-to-columns conversion, the reads, and the store itself. clickhouse-driver
(the ``clickhouse`` extra) is imported only when a store connects."""

from reach_collector.store.clickhouse.store import ClickHouseStore
from reach_collector.store.clickhouse.url import (
    ClickHouseURL,
    URLError,
    is_clickhouse_url,
    parse_clickhouse_url,
)

__all__ = ["ClickHouseStore", "ClickHouseURL", "URLError", "is_clickhouse_url", "parse_clickhouse_url"]

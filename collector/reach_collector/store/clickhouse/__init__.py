"""The ClickHouse store (``--db clickhouse://HOST:9000/DATABASE[?cluster=NAME]``): URL, schema and
migrations, the Arrow-to-columns conversion, the reads, and the store itself. Importing the
package costs nothing: the store (pyarrow) and clickhouse-driver (the ``clickhouse`` extra) load
when first used."""

from __future__ import annotations

from typing import Any

from reach_collector.text.clickhouse_url import (
    ClickHouseURL,
    URLError,
    is_clickhouse_url,
    parse_clickhouse_url,
)

__all__ = ["ClickHouseStore", "ClickHouseURL", "URLError", "is_clickhouse_url", "parse_clickhouse_url"]


def __getattr__(name: str) -> Any:
    if name == "ClickHouseStore":
        from reach_collector.store.clickhouse.store import ClickHouseStore

        return ClickHouseStore
    raise AttributeError(name)

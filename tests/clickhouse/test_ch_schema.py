"""The schema is created if missing, recorded by version, idempotent on a second open, refused
when newer than the collector — on Debian's 18.16 server and on current ClickHouse (chdb)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ch_server import ClickHouseServer
from reach_collector.store.clickhouse import ClickHouseStore, parse_clickhouse_url
from reach_collector.store.clickhouse.chdb_backend import ChdbBackend
from reach_collector.store.clickhouse.driver import StoreError
from reach_collector.store.clickhouse.migrate import SCHEMA_VERSION
from reach_collector.store.clickhouse.schema import TABLES

pytest.importorskip("clickhouse_driver")


def _tables(execute, db: str) -> dict[str, str]:
    rows = execute(f"SELECT name, engine FROM system.tables WHERE database = '{db}'")
    return {name: engine for name, engine in rows}


def test_created_and_versioned_on_18_16(clickhouse: ClickHouseServer, ch_database: str) -> None:
    store = ClickHouseStore(clickhouse.url(ch_database))
    try:
        tables = _tables(clickhouse.execute, ch_database)
        for table in (*TABLES, "schema_version"):
            assert table in tables
        assert tables["spans"] == "MergeTree"
        assert tables["traces"] == "AggregatingMergeTree"
        assert tables["traces_mv"] == "MaterializedView"
        rows = clickhouse.execute(f"SELECT version FROM {ch_database}.schema_version")
        assert rows == [(SCHEMA_VERSION,)]
    finally:
        store.close()
    # A second collector on the same database changes nothing.
    again = ClickHouseStore(clickhouse.url(ch_database))
    again.close()
    assert clickhouse.execute(f"SELECT count() FROM {ch_database}.schema_version") == [(1,)]


def test_newer_schema_is_refused(clickhouse: ClickHouseServer, ch_database: str) -> None:
    ClickHouseStore(clickhouse.url(ch_database)).close()
    clickhouse.execute(
        f"INSERT INTO {ch_database}.schema_version (version, description, applied_ns) "
        f"SELECT {SCHEMA_VERSION + 1}, 'from the future', 0"
    )
    with pytest.raises(StoreError, match="newer than this collector"):
        ClickHouseStore(clickhouse.url(ch_database))


def test_created_on_current_clickhouse(tmp_path: Path) -> None:
    pytest.importorskip("chdb")
    backend = ChdbBackend(tmp_path / "chdb")
    store = ClickHouseStore(parse_clickhouse_url("clickhouse://localhost/reach"), backend=backend)
    try:
        tables = _tables(backend.execute, "reach")
        assert {*TABLES, "schema_version", "traces_mv"} <= set(tables)
        assert backend.execute("SELECT max(version) FROM reach.schema_version") == [(SCHEMA_VERSION,)]
    finally:
        store.close()

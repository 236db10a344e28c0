"""The schema is created if missing, recorded by version, idempotent on a second open, refused
when newer than the collector, upgraded from version 1 when that can be done in place and refused
untouched when not — on Debian's 18.16 server and on current ClickHouse (chdb)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ch_server import CLUSTER, ClickHouseServer

from reach_collector.store.base import TraceFilter
from reach_collector.store.clickhouse import ClickHouseStore, parse_clickhouse_url
from reach_collector.store.clickhouse.chdb_backend import ChdbBackend
from reach_collector.store.clickhouse.driver import StoreError
from reach_collector.store.clickhouse.migrate import SCHEMA_VERSION
from reach_collector.store.clickhouse.schema import HOUR_NS, SCHEMA_VERSION_DDL, TABLES, Layout

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


def _version_1(execute, db: str, cluster: str | None = None) -> None:
    """A database (or one shard's) as a development build left it: schema version 1, the span
    table and the trace lookup partitioned and ordered by the spans' start time."""
    execute(f"CREATE DATABASE IF NOT EXISTS {db}")
    execute(SCHEMA_VERSION_DDL.format(db=db))
    for statement in Layout(db, cluster).table_ddl():
        execute(statement.replace("intDiv(end_ns", "intDiv(start_ns").replace("end_hour", "start_hour"))
    execute(f"INSERT INTO {db}.schema_version (version, description, applied_ns) SELECT 1, 'v1', 0")


def _span_request(start_ns: int, end_ns: int) -> bytes:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    req = ExportTraceServiceRequest()
    span = req.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = b"\x01" * 16, b"\x02" * 8, "long"
    span.start_time_unix_nano, span.end_time_unix_nano = start_ns, end_ns
    return req.SerializeToString()


def _upgrade_checks(store: ClickHouseStore, executes: list, db: str, local: str = "") -> None:
    """Every shard at the latest version, and a span written after the upgrade stored by its end
    time (in ``spans{local}`` on the shard that holds it) and read back."""
    from reach_collector.ingest.decode import PROTOBUF, parse
    from reach_collector.ingest.rows import flatten

    for execute in executes:
        versions = execute(f"SELECT version FROM {db}.schema_version ORDER BY version")
        assert [v for (v,) in versions] == [*range(1, SCHEMA_VERSION + 1)]
    # A span from one hour to the next lands in its end's hour: the window queries' partitions.
    start = 1_700_000_000 * 10**9
    start -= start % HOUR_NS
    batch = flatten(parse(_span_request(start + HOUR_NS // 2, start + HOUR_NS * 3 // 2), PROTOBUF))
    store.write(batch.table, batch.parts)
    for table in ("spans", "traces"):
        where = f"database = '{db}' AND table = '{table}{local}' AND active"
        parts = [
            p for ex in executes for (p,) in ex(f"SELECT DISTINCT partition FROM system.parts WHERE {where}")
        ]
        assert [str(p).strip("'") for p in parts] == [str(start // HOUR_NS + 1)]
    assert [s["name"] for s in store.trace_spans("01" * 16) or ()] == ["long"]
    found = store.search(TraceFilter(since_ns=start, limit=10))
    assert [(t["trace_id"], t["span_count"]) for t in found] == [("01" * 16, 1)]
    columns = {
        c for ex in executes for (c,) in ex(f"SELECT name FROM system.columns WHERE database = '{db}'")
    }
    assert "end_hour" in columns and "start_hour" not in columns  # the Distributed tables' too


def test_empty_version_1_database_upgraded_on_18_16(clickhouse: ClickHouseServer, ch_database: str) -> None:
    _version_1(clickhouse.execute, ch_database)
    store = ClickHouseStore(clickhouse.url(ch_database))
    try:
        _upgrade_checks(store, [clickhouse.execute], ch_database)
    finally:
        store.close()


def test_empty_version_1_database_upgraded_on_current_clickhouse(tmp_path: Path) -> None:
    pytest.importorskip("chdb")
    backend = ChdbBackend(tmp_path / "chdb")
    _version_1(backend.execute, "reach")
    store = ClickHouseStore(parse_clickhouse_url("clickhouse://localhost/reach"), backend=backend)
    try:
        _upgrade_checks(store, [backend.execute], "reach")
    finally:
        store.close()


def test_empty_version_1_cluster_upgraded_on_every_shard(
    clickhouse_cluster: list[ClickHouseServer], ch_database: str
) -> None:
    for server in clickhouse_cluster:
        _version_1(server.execute, ch_database, CLUSTER)
    store = ClickHouseStore(clickhouse_cluster[0].url(ch_database, cluster=CLUSTER))
    try:
        _upgrade_checks(store, [s.execute for s in clickhouse_cluster], ch_database, "_local")
    finally:
        store.close()


def test_version_1_cluster_with_spans_on_one_shard_refused_on_every_shard(
    clickhouse_cluster: list[ClickHouseServer], ch_database: str
) -> None:
    first, second = clickhouse_cluster
    for server in clickhouse_cluster:
        _version_1(server.execute, ch_database, CLUSTER)
    second.execute(
        f"INSERT INTO {ch_database}.spans_local (trace_id, span_id, start_ns, end_ns) SELECT 't', 's', 1, 2"
    )
    with pytest.raises(StoreError, match=r"holds 1 spans in schema version 1"):
        ClickHouseStore(first.url(ch_database, cluster=CLUSTER))
    for server in clickhouse_cluster:  # neither shard changed: no half-upgraded cluster
        assert server.execute(f"SELECT max(version) FROM {ch_database}.schema_version") == [(1,)]
        columns = server.execute(f"SELECT name FROM system.columns WHERE database = '{ch_database}'")
        assert ("start_hour",) in columns and ("end_hour",) not in columns


def test_version_1_database_with_spans_refused_untouched(
    clickhouse: ClickHouseServer, ch_database: str
) -> None:
    _version_1(clickhouse.execute, ch_database)
    clickhouse.execute(
        f"INSERT INTO {ch_database}.spans (trace_id, span_id, start_ns, end_ns) SELECT 't', 's', 1, 2"
    )
    with pytest.raises(StoreError, match=r"holds 1 spans in schema version 1.*new database.*INSERT INTO"):
        ClickHouseStore(clickhouse.url(ch_database))
    assert clickhouse.execute(f"SELECT count() FROM {ch_database}.spans") == [(1,)]
    assert clickhouse.execute(f"SELECT max(version) FROM {ch_database}.schema_version") == [(1,)]

"""Retention on ClickHouse drops whole partitions: the hours of span start times whose spans all
ended before the cutoff (with their lookup rows), and whole days of heartbeats — driven by the
same ``retention`` setting as DuckDB's, on 18.16 and on current ClickHouse (chdb)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ch_server import ClickHouseServer
from ch_spans import make_request
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from reach_collector.app import create_app
from reach_collector.config import Settings
from reach_collector.ingest.decode import PROTOBUF, parse
from reach_collector.ingest.rows import flatten
from reach_collector.store.clickhouse import ClickHouseStore
from reach_collector.store.duckdb_store import TraceFilter

HOUR = 3600 * 10**9
DAY = 24 * HOUR


@pytest.fixture(params=["clickhouse-18.16", "chdb"])
def store(request: pytest.FixtureRequest, tmp_path: Path, ch_database: str) -> Iterator[ClickHouseStore]:
    if request.param == "chdb":
        pytest.importorskip("chdb")
        st = ClickHouseStore.in_process(tmp_path / "chdb")
    else:
        server: ClickHouseServer = request.getfixturevalue("clickhouse")
        st = ClickHouseStore(server.url(ch_database))
    yield st
    st.close()


def _write(store: ClickHouseStore, body: bytes) -> int:
    batch = flatten(parse(body, PROTOBUF))
    store.write(batch.table, batch.parts)
    return batch.accepted


def test_old_partitions_dropped_young_ones_kept(store: ClickHouseStore) -> None:
    now = time.time_ns()
    old, old_ids = make_request(now - 5 * HOUR, traces=6, seed=81)
    # A trace from hours later, but still running: its root span ends now, so its hour stays whole.
    request = ExportTraceServiceRequest.FromString(make_request(now - 7 * HOUR // 2, traces=1, seed=82)[0])
    running = request.resource_spans[0].scope_spans[0].spans[0]
    running.end_time_unix_nano = now
    running_id = running.trace_id.hex()
    young, young_ids = make_request(now, traces=6, seed=83)
    old_spans = _write(store, old)
    _write(store, request.SerializeToString())
    young_spans = _write(store, young)
    running_spans = len(request.resource_spans[0].scope_spans[0].spans)
    store.append("heartbeats", [("old-agent", now - 3 * DAY, "s", None, None, None)])
    store.append("heartbeats", [("young-agent", now - 10**9, "s", None, None, None)])

    # The app's retention job, from the same `retention` setting DuckDB uses.
    app = create_app(Settings(db=store.where, retention_s=2 * 3600), store=store, alert_loop=False)
    try:
        dropped = app.state.retention.run_once()
    finally:
        app.state.writer.close()
    assert dropped == old_spans
    assert store.count_spans() == young_spans + running_spans
    for tid in old_ids:
        assert store.trace_spans(tid) is None
    for tid in (*young_ids, running_id):
        assert store.trace_spans(tid)
    found = {t["trace_id"] for t in store.search(TraceFilter(limit=100))}
    assert found == {*young_ids, running_id}
    assert set(store.last_api_heartbeats(now, 7 * 86400)) == {"young-agent"}
    # Nothing left to drop: a second run drops nothing.
    assert store.delete_older_than(now - 2 * HOUR) == 0

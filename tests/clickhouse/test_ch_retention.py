"""Retention on ClickHouse drops whole partitions: the hours of span end times before the cutoff's
hour (with their lookup rows), and whole days of heartbeats — driven by the same ``retention``
setting as DuckDB's, on 18.16 and on current ClickHouse (chdb), and dropping what DuckDB's
retention deletes from the same spans; the alert history pruned row by row as on DuckDB."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ch_collectors import ENGINES, engine_store
from ch_spans import make_request
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from reach_collector.alerting.evaluation.history import Acknowledgement
from reach_collector.alerting.evaluation.state import AlertState, Transition
from reach_collector.alerting.evaluation.store_history import StoreHistory
from reach_collector.app import create_app
from reach_collector.config import Settings
from reach_collector.ingest.decode import PROTOBUF, parse
from reach_collector.ingest.rows import flatten
from reach_collector.query.heartbeats import last_posted
from reach_collector.store.base import TraceFilter
from reach_collector.store.clickhouse import ClickHouseStore
from reach_collector.store.duckdb_store import DuckDBStore

HOUR = 3600 * 10**9
DAY = 24 * HOUR


@pytest.fixture(params=ENGINES)
def store(request: pytest.FixtureRequest, tmp_path: Path, ch_database: str) -> Iterator[ClickHouseStore]:
    st = engine_store(request, tmp_path, ch_database)
    yield st
    st.close()


def _write(store: ClickHouseStore | DuckDBStore, body: bytes) -> int:
    batch = flatten(parse(body, PROTOBUF))
    store.write(batch.table, batch.parts)
    return batch.accepted


def _span_ids(store: ClickHouseStore | DuckDBStore, trace_ids: list[str]) -> dict[str, list[str]]:
    return {tid: sorted(s["span_id"] for s in store.trace_spans(tid) or ()) for tid in trace_ids}


def test_old_partitions_dropped_young_ones_kept(store: ClickHouseStore, tmp_path: Path) -> None:
    now = time.time_ns()
    old, old_ids = make_request(now - 5 * HOUR, traces=6, seed=81)
    # A trace from hours later, but still running: its root span ends now, so it stays, while its
    # other spans ended long before the cutoff and go, as on DuckDB.
    request = ExportTraceServiceRequest.FromString(make_request(now - 7 * HOUR // 2, traces=1, seed=82)[0])
    running = request.resource_spans[0].scope_spans[0].spans[0]
    running.end_time_unix_nano = now
    running_id = running.trace_id.hex()
    young, young_ids = make_request(now, traces=6, seed=83)
    bodies = [old, request.SerializeToString(), young]
    old_spans, _, young_spans = (_write(store, body) for body in bodies)
    duck = DuckDBStore(tmp_path / "traces.duckdb")
    for body in bodies:
        _write(duck, body)
    running_spans = len(request.resource_spans[0].scope_spans[0].spans)
    store.append("heartbeats", [("old-agent", now - 3 * DAY, "s", None, None, None)])
    store.append("heartbeats", [("young-agent", now - 10**9, "s", None, None, None)])

    # The app's retention job, from the same `retention` setting DuckDB uses.
    app = create_app(Settings(db=store.where, retention_s=2 * 3600), store=store, alert_loop=False)
    try:
        dropped = app.state.retention.run_once()
    finally:
        app.state.writer.close()
    assert dropped == old_spans + running_spans - 1
    assert store.count_spans() == young_spans + 1
    for tid in old_ids:
        assert store.trace_spans(tid) is None
    assert [s["span_id"] for s in store.trace_spans(running_id) or ()] == [running.span_id.hex()]
    # What DuckDB's retention keeps of the same spans, trace by trace.
    duck.delete_older_than(now - 2 * HOUR)
    every = [*old_ids, running_id, *young_ids]
    assert _span_ids(store, every) == _span_ids(duck, every)
    duck.close()
    found = {t["trace_id"] for t in store.search(TraceFilter(limit=100))}
    assert found == {*young_ids, running_id}
    assert set(last_posted(store, now, 7 * 86400)) == {"young-agent"}
    # Nothing left to drop: a second run drops nothing.
    assert store.delete_older_than(now - 2 * HOUR) == 0


def _history_rows(store: ClickHouseStore | DuckDBStore) -> tuple[list[Any], list[Any]]:
    transitions = store.query(
        "SELECT fingerprint, to_state, time_ns FROM alert_transitions ORDER BY fingerprint, time_ns, to_state"
    )
    acks = store.query("SELECT fingerprint, acked_by FROM alert_acks ORDER BY fingerprint")
    return [tuple(r) for r in transitions], [tuple(r) for r in acks]


def test_alert_history_pruned_as_on_duckdb(store: ClickHouseStore, tmp_path: Path) -> None:
    """Old transitions and acks go, those of episodes still pending or firing stay (a restart
    restores them): the rows DuckDB's retention keeps, and the same restored state."""
    now = time.time()
    old, recent = now - 10 * 86400, now - 60
    firing, resolved, pending = AlertState.FIRING, AlertState.RESOLVED, AlertState.PENDING
    episodes = [  # (fingerprint, time, from, to, active_at, fired_at)
        ("A", old, AlertState.INACTIVE, firing, old, old),  # resolved long ago: goes
        ("A", old + 60, firing, resolved, old, old),
        ("B", old, AlertState.INACTIVE, firing, old, old),  # fired long ago, still firing: stays
        ("C", recent, AlertState.INACTIVE, pending, recent, None),  # recent: stays
    ]
    duck = DuckDBStore(tmp_path / "history.duckdb")
    for st in (store, duck):
        history = StoreHistory(st)
        for fp, t, before, after, active_at, fired_at in episodes:
            history.record_transition(
                Transition(
                    t,
                    "ReachSuccessRateLow",
                    "P0",
                    {"agent": fp},
                    fp,
                    before,
                    after,
                    0.5,
                    {},
                    active_at,
                    fired_at,
                )
            )
        history.record_ack(Acknowledgement("A", "alice", old, old))
        history.record_ack(Acknowledgement("B", "bob", old, old))
        st.delete_older_than(int((now - 7 * 86400) * 1e9))
    expected = _history_rows(duck)
    assert {fp for fp, _, _ in expected[0]} == {"B", "C"} and expected[1] == [("B", "bob")]
    deadline = time.monotonic() + 30  # a mutation is asynchronous on 18.16
    while _history_rows(store) != expected and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _history_rows(store) == expected
    assert StoreHistory(store).active() == StoreHistory(duck).active()
    # Nothing left to prune: a second run starts no mutation.
    store.delete_older_than(int((now - 7 * 86400) * 1e9))
    assert _history_rows(store) == expected
    duck.close()

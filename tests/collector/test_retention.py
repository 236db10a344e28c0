"""Retention drops spans (and lookup rows) older than the window, on an injected clock."""

from __future__ import annotations

from pathlib import Path

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from reach_collector.ingest.rows import flatten
from reach_collector.ingest.writer import Writer
from reach_collector.retention import RetentionJob
from reach_collector.store.base import TraceFilter
from reach_collector.store.duckdb_store import DuckDBStore

DAY_NS = 86400 * 10**9


def _request(trace: int, end_ns: int) -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    span = req.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id = trace.to_bytes(16, "big"), trace.to_bytes(8, "big")
    span.start_time_unix_nano, span.end_time_unix_nano = end_ns - 1000, end_ns
    return req


def test_retention_removes_old_spans_and_traces(tmp_path: Path) -> None:
    now_s = 1_800_000_000.0
    now_ns = int(now_s * 1e9)
    store = DuckDBStore(tmp_path / "r.duckdb")
    writer = Writer(store)
    for trace, age_days in ((1, 10), (2, 8), (3, 1), (4, 0)):
        batch = flatten(_request(trace, now_ns - age_days * DAY_NS))
        writer.submit(batch.table, batch.parts).result(10)
    job = RetentionJob(writer, retention_s=7 * 86400, clock=lambda: now_s)
    assert job.run_once() == 2
    assert store.count_spans() == 2
    remaining = {t["trace_id"] for t in store.search(TraceFilter(limit=10))}
    assert remaining == {(3).to_bytes(16, "big").hex(), (4).to_bytes(16, "big").hex()}
    assert store.trace_spans((1).to_bytes(16, "big").hex()) is None
    assert job.run_once() == 0
    writer.close()
    store.close()


def test_retention_runs_every_quarter_of_its_window_within_bounds(tmp_path: Path) -> None:
    store = DuckDBStore(tmp_path / "q.duckdb")
    writer = Writer(store)
    clock = lambda: 1_800_000_000.0  # noqa: E731
    periods = [RetentionJob(writer, window, clock)._every for window in (20.0, 120.0, 7 * 86400.0)]
    assert periods == [10.0, 30.0, 600.0]
    assert RetentionJob(writer, 120.0, clock, every_s=5.0)._every == 5.0
    writer.close()
    store.close()

"""The trace lookup: parts appended per batch, folded into `traces`; answers equal at every stage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from reach_collector.ingest.rows import flatten
from reach_collector.store.base import TraceFilter
from reach_collector.store.duckdb_store import DuckDBStore
from reach_otel import semconv as sc

TRACE = bytes(range(1, 17))


def _batch(spans: list[dict[str, Any]]) -> Any:
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    kv = rs.resource.attributes.add()
    kv.key, kv.value.string_value = "service.name", spans[0].get("service", "svc-a")
    scope = rs.scope_spans.add()
    for fields in spans:
        s = scope.spans.add()
        s.trace_id = TRACE
        s.span_id = fields["id"].to_bytes(8, "big")
        if "parent" in fields:
            s.parent_span_id = fields["parent"].to_bytes(8, "big")
        s.name = fields["name"]
        s.start_time_unix_nano, s.end_time_unix_nano = fields["start"], fields["end"]
        if fields.get("error"):
            s.status.code = 2
        for key, value in fields.get("attrs", {}).items():
            a = s.attributes.add()
            a.key, a.value.string_value = key, value
    return flatten(req)


def _write(store: DuckDBStore, batch: Any) -> None:
    store.write(batch.table, batch.parts)


def _summary(store: DuckDBStore, **kw: Any) -> list[dict[str, Any]]:
    keys = ("trace_id", "root_name", "first_start_ns", "last_end_ns", "span_count", "error_count", "hops")
    return [
        {k: row[k] for k in keys} | {"agents": sorted(row["agents"])}
        for row in store.search(TraceFilter(**kw))
    ]


def test_split_trace_is_merged_before_and_after_compaction(tmp_path: Path) -> None:
    store = DuckDBStore(tmp_path / "s.duckdb", compact_rows=10**9)
    agent = {sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT, sc.GEN_AI_AGENT_NAME: "Billing"}
    # The children arrive first (they end first), then the root, then a late handoff.
    _write(
        store,
        _batch(
            [
                {
                    "id": 2,
                    "parent": 1,
                    "name": "invoke_agent Billing",
                    "start": 200,
                    "end": 300,
                    "attrs": agent,
                    "error": True,
                }
            ]
        ),
    )
    first = _summary(store)
    assert first[0]["root_name"] == "invoke_agent Billing"  # no root yet: the earliest span's name
    _write(
        store,
        _batch([{"id": 1, "name": "invoke_workflow turn", "start": 100, "end": 900, "service": "svc-b"}]),
    )
    _write(
        store,
        _batch(
            [
                {
                    "id": 3,
                    "parent": 1,
                    "name": "handoff Billing",
                    "start": 150,
                    "end": 160,
                    "attrs": {sc.GEN_AI_OPERATION_NAME: sc.OP_HANDOFF},
                }
            ]
        ),
    )
    expected = [
        {
            "trace_id": TRACE.hex(),
            "root_name": "invoke_workflow turn",
            "first_start_ns": 100,
            "last_end_ns": 900,
            "span_count": 3,
            "error_count": 1,
            "hops": 1,
            "agents": ["Billing"],
        }
    ]
    before = _summary(store)
    assert before == expected
    assert (
        _summary(store, service="svc-b", agent="Billing", errors_only=True, min_duration_ms=0.0007)
        == expected
    )
    assert _summary(store, min_duration_ms=0.0009) == []
    assert [r["span_id"] for r in store.trace_spans(TRACE.hex()) or []] == [f"{i:016x}" for i in (1, 3, 2)]
    store.compact()
    assert _summary(store) == expected
    assert _summary(store, service="svc-a", agent="Billing") == expected
    # A part arriving after compaction merges with the compacted row.
    _write(store, _batch([{"id": 4, "parent": 1, "name": "late", "start": 50, "end": 1000, "error": True}]))
    merged = [{**expected[0], "first_start_ns": 50, "last_end_ns": 1000, "span_count": 4, "error_count": 2}]
    assert _summary(store) == merged
    assert len(store.trace_spans(TRACE.hex()) or []) == 4
    store.compact()
    assert _summary(store) == merged
    assert _summary(store, since_ns=60) == []
    store.close()
    reopened = DuckDBStore(tmp_path / "s.duckdb")
    assert _summary(reopened) == merged
    reopened.close()


def test_maintain_compacts_when_parts_pile_up(tmp_path: Path) -> None:
    store = DuckDBStore(tmp_path / "m.duckdb", compact_rows=2)
    _write(store, _batch([{"id": 1, "name": "a", "start": 1, "end": 2}]))
    store.maintain(idle=False)
    assert store.query("SELECT count(*) FROM trace_parts") == [(1,)]
    _write(store, _batch([{"id": 2, "name": "b", "start": 1, "end": 3}]))
    store.maintain(idle=False)
    assert store.query("SELECT count(*) FROM trace_parts") == [(0,)]
    assert store.query("SELECT span_count FROM traces") == [(2,)]
    store.close()

"""Evaluations on ClickHouse (SPEC §16, §18): a version-2 database is upgraded to version 3 with
the ``evaluations`` table, and the same spans and evaluations written to DuckDB and to current
ClickHouse (chdb, in process) give the same trace-view evaluations, quality groups by every
``by``, span owners, and the same retention."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from reach_collector.ingest.decode import PROTOBUF, parse
from reach_collector.ingest.evaluations import from_span_events
from reach_collector.ingest.rows import flatten
from reach_collector.query import evaluations
from reach_collector.store.base import TraceStore
from reach_collector.store.clickhouse import ClickHouseStore, parse_clickhouse_url
from reach_collector.store.clickhouse.chdb_backend import ChdbBackend
from reach_collector.store.clickhouse.migrate import SCHEMA_VERSION
from reach_collector.store.clickhouse.schema import SCHEMA_VERSION_DDL, Layout
from reach_collector.store.duckdb_store import DuckDBStore
from reach_otel import semconv as sc

pytest.importorskip("chdb")

NOW = 1_700_000_000 * 10**9
S = 10**9


def test_version_2_database_gains_the_evaluations_table(tmp_path: Path) -> None:
    backend = ChdbBackend(tmp_path / "chdb")
    backend.execute("CREATE DATABASE IF NOT EXISTS reach")
    backend.execute(SCHEMA_VERSION_DDL.format(db="reach"))
    for statement in Layout("reach").table_ddl():
        if "evaluations" not in statement:  # what a version-2 collector created
            backend.execute(statement)
    backend.execute("INSERT INTO reach.schema_version (version, description, applied_ns) SELECT 2, 'v2', 0")
    assert not backend.execute(
        "SELECT name FROM system.tables WHERE database = 'reach' AND name = 'evaluations'"
    )
    store = ClickHouseStore(parse_clickhouse_url("clickhouse://localhost/reach"), backend=backend)
    try:
        versions = backend.execute("SELECT version FROM reach.schema_version ORDER BY version")
        assert [v for (v,) in versions] == [2, 3] and SCHEMA_VERSION == 3
        store.append(
            "evaluations", [(NOW, "ab" * 16, "cd" * 8, None, "relevance", 0.5, "ok", None, None, "s", "log")]
        )
        assert store.query("SELECT name, score FROM evaluations") == [("relevance", 0.5)]
    finally:
        store.close()
    # opened again, nothing more to do
    again = ClickHouseStore(
        parse_clickhouse_url("clickhouse://localhost/reach"), backend=ChdbBackend(tmp_path / "chdb")
    )
    again.close()


def _span(
    scope: Any,
    trace: int,
    span: int,
    parent: int | None,
    name: str,
    start: int,
    attrs: dict[str, Any],
    events: Sequence[tuple[str, dict[str, Any]]] = (),
) -> None:
    s = scope.spans.add()
    s.trace_id, s.span_id = trace.to_bytes(16, "big"), span.to_bytes(8, "big")
    if parent is not None:
        s.parent_span_id = parent.to_bytes(8, "big")
    s.name, s.start_time_unix_nano, s.end_time_unix_nano = name, start, start + S
    for key, value in attrs.items():
        kv = s.attributes.add()
        kv.key = key
        kv.value.string_value = value
    for event_name, event_attrs in events:
        ev = s.events.add()
        ev.name, ev.time_unix_nano = event_name, start + S // 2
        for key, value in event_attrs.items():
            kv = ev.attributes.add()
            kv.key = key
            if isinstance(value, float):
                kv.value.double_value = value
            else:
                kv.value.string_value = value


def _spans() -> Any:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    kv = rs.resource.attributes.add()
    kv.key, kv.value.string_value = sc.SERVICE_NAME, "support"
    scope = rs.scope_spans.add()
    agent = lambda name: {sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT, sc.GEN_AI_AGENT_NAME: name}  # noqa: E731
    for t, model, rid in ((1, "m-a", "resp-1"), (2, "m-b", "resp-2")):
        start = NOW - 600 * S + t * S
        _span(
            scope, t, 10, None, "invoke_workflow support", start, {sc.GEN_AI_OPERATION_NAME: sc.OP_WORKFLOW}
        )
        _span(scope, t, 11, 10, "invoke_agent triage", start + 1, agent("triage"))
        _span(scope, t, 12, 11, "invoke_agent billing", start + 2, agent("billing"))
        llm = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
            sc.GEN_AI_REQUEST_MODEL: model,
            sc.GEN_AI_RESPONSE_ID: rid,
        }
        judged = {
            sc.GEN_AI_EVALUATION_NAME: "toxicity",
            sc.GEN_AI_EVALUATION_SCORE_VALUE: 0.0,
            sc.GEN_AI_EVALUATION_SCORE_LABEL: "clean",
        }
        _span(scope, t, 13, 12, f"chat {model}", start + 3, llm, [(sc.GEN_AI_EVALUATION_RESULT, judged)])
    return flatten(parse(req.SerializeToString(), PROTOBUF))


def _tid(t: int) -> str:
    return t.to_bytes(16, "big").hex()


def _sid(s: int) -> str:
    return s.to_bytes(8, "big").hex()


EVALUATIONS = [
    # time, trace, span, response id, name, score, label, explanation, error type, service, source
    (
        NOW - 60 * S,
        _tid(1),
        _sid(13),
        None,
        "relevance",
        0.2,
        "irrelevant",
        "off topic",
        None,
        "judge",
        "log",
    ),
    (NOW - 50 * S, None, None, "resp-2", "relevance", 0.9, "relevant", None, None, "judge", "log"),
    (NOW - 40 * S, _tid(1), None, None, "user_feedback", 0.0, "thumbs_down", "wrong", None, None, "feedback"),
    (NOW - 30 * S, _tid(2), _sid(11), None, "politeness", 1.0, "polite", None, None, "judge", "log"),
    (
        NOW - 20 * S,
        _tid(9),
        _sid(9),
        None,
        "relevance",
        None,
        "relevant",
        None,
        None,
        "judge",
        "log",
    ),  # span unknown
    (NOW - 7200 * S, _tid(1), _sid(12), None, "relevance", 0.5, "partial", None, None, "judge", "log"),  # old
]


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[list[TraceStore]]:
    batch = _spans()
    out: list[TraceStore] = [
        DuckDBStore(tmp_path / "t.duckdb"),
        ClickHouseStore.in_process(tmp_path / "chdb"),
    ]
    for store in out:
        store.write(batch.table, batch.parts)
        store.append("evaluations", EVALUATIONS)
        store.append("evaluations", from_span_events(batch.table))
    yield out
    for store in out:
        store.close()


def test_quality_matches_on_both_stores(stores: list[TraceStore]) -> None:
    duck, ch = stores
    for by in evaluations.BY_VALUES:
        for window in (300, 3600, 10_800):
            assert evaluations.quality(duck, NOW, window, by) == evaluations.quality(ch, NOW, window, by), (
                by,
                window,
            )
    groups = {g["key"]: g for g in evaluations.quality(duck, NOW, 300, "agent")["groups"]}
    # relevance (chat 1 → billing), relevance by response id (chat 2 → billing), feedback on root
    # (no agent above it), politeness (triage), relevance on an unknown span (no agent)
    assert groups["billing"] == {
        "key": "billing",
        "evaluations": 2,
        "mean_score": pytest.approx(0.55),
        "labels": {"irrelevant": 1, "relevant": 1},
    }
    assert groups["triage"]["evaluations"] == 1
    assert groups[None]["evaluations"] == 2
    model = {g["key"]: g["evaluations"] for g in evaluations.quality(duck, NOW, 300, "model")["groups"]}
    assert model == {"m-a": 1, "m-b": 1, None: 3}


def test_trace_view_and_owners_match_on_both_stores(stores: list[TraceStore]) -> None:
    duck, ch = stores
    for t in (1, 2):
        tid = _tid(t)
        views = [evaluations.for_trace(store, tid, store.trace_spans(tid) or []) for store in stores]
        assert views[0] == views[1]
    one = evaluations.for_trace(duck, _tid(1), duck.trace_spans(_tid(1)) or [])
    assert sorted(one) == [_sid(10), _sid(12), _sid(13)]
    assert [e["name"] for e in one[_sid(13)]] == ["toxicity", "relevance"]  # oldest first (the span event)
    keys = [(r[1], r[2], r[3]) for r in EVALUATIONS]
    assert evaluations.owners_of(duck, keys, 0) == evaluations.owners_of(ch, keys, 0)


def test_retention_prunes_evaluations_on_both_stores(stores: list[TraceStore]) -> None:
    for store in stores:
        store.delete_older_than(NOW + 3 * 86_400 * S)
        assert store.query("SELECT count() FROM evaluations") == [(0,)]

"""Conversations on both stores (SPEC §16, §18): the same spans, with their conversation ids,
handoffs, LLM tokens, errors and evaluations, written to DuckDB and to current ClickHouse (chdb, in
process) give the same ``/api/conversations`` list and the same traces of one conversation."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reach_collector.ingest.decode import PROTOBUF, parse
from reach_collector.ingest.rows import flatten
from reach_collector.query import conversations
from reach_collector.store.base import TraceStore
from reach_collector.store.clickhouse import ClickHouseStore
from reach_collector.store.duckdb_store import DuckDBStore
from reach_otel import semconv as sc

pytest.importorskip("chdb")

NOW = 1_700_000_000 * 10**9
S = 10**9
PRICES = {"m": {"input": 1.0, "output": 2.0}}


def _request() -> Any:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    req = ExportTraceServiceRequest()
    scope = req.resource_spans.add().scope_spans.add()

    def span(
        trace: int, sid: int, parent: int | None, start: int, attrs: dict[str, Any], error: bool = False
    ) -> None:
        s = scope.spans.add()
        s.trace_id, s.span_id = trace.to_bytes(16, "big"), sid.to_bytes(8, "big")
        if parent is not None:
            s.parent_span_id = parent.to_bytes(8, "big")
        s.name, s.start_time_unix_nano, s.end_time_unix_nano = "s", start, start + S
        if error:
            s.status.code = 2
        for key, value in attrs.items():
            kv = s.attributes.add()
            kv.key = key
            if isinstance(value, int):
                kv.value.int_value = value
            else:
                kv.value.string_value = value

    for trace, conv, agents, start in (
        (1, "a", ("triage", "billing"), 100),
        (2, "a", ("billing",), 50),
        (3, "b", ("triage",), 20),
    ):
        base = NOW - start * S
        c = {sc.GEN_AI_CONVERSATION_ID: conv}
        span(trace, 1, None, base, {**c, sc.GEN_AI_OPERATION_NAME: sc.OP_WORKFLOW})
        for i, agent in enumerate(agents):
            if i:
                span(trace, 10 + i, 1, base + i, {**c, sc.GEN_AI_OPERATION_NAME: sc.OP_HANDOFF})
            span(
                trace,
                20 + i,
                1,
                base + i,
                {**c, sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT, sc.GEN_AI_AGENT_NAME: agent},
                error=trace == 2,
            )
            span(
                trace,
                30 + i,
                20 + i,
                base + i,
                {
                    **c,
                    sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
                    sc.GEN_AI_REQUEST_MODEL: "m",
                    sc.GEN_AI_USAGE_INPUT_TOKENS: 10 * trace,
                    sc.GEN_AI_USAGE_OUTPUT_TOKENS: 5,
                },
            )
    return flatten(parse(req.SerializeToString(), PROTOBUF))


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[list[TraceStore]]:
    batch = _request()
    judged = [
        (
            NOW,
            (1).to_bytes(16, "big").hex(),
            None,
            None,
            "user_feedback",
            1.0,
            "good",
            None,
            None,
            None,
            "feedback",
        )
    ]
    out: list[TraceStore] = [
        DuckDBStore(tmp_path / "t.duckdb"),
        ClickHouseStore.in_process(tmp_path / "chdb"),
    ]
    for store in out:
        store.write(batch.table, batch.parts)
        store.append("evaluations", judged)
    yield out
    for store in out:
        store.close()


def test_conversations_match_on_both_stores(stores: list[TraceStore]) -> None:
    duck, ch = stores
    for window in (30, 60, 3600):
        assert conversations.conversations(duck, NOW, window, PRICES) == conversations.conversations(
            ch, NOW, window, PRICES
        )
    listed = {
        c["conversation_id"]: c for c in conversations.conversations(duck, NOW, 3600, PRICES)["conversations"]
    }
    assert listed["a"]["traces"] == 2 and listed["a"]["handoffs"] == 1 and listed["a"]["errors"] == 1
    assert listed["a"]["input_tokens"] == 10 * 2 + 20 and listed["a"]["evaluations"] == 1
    assert listed["a"]["cost_usd"] == pytest.approx((40 * 1.0 + 15 * 2.0) / 1e6)
    one = [conversations.conversation(store, "a") for store in stores]
    assert one[0] == one[1]
    assert one[0] is not None and [t["trace_id"] for t in one[0]["traces"]] == [
        (1).to_bytes(16, "big").hex(),
        (2).to_bytes(16, "big").hex(),
    ]

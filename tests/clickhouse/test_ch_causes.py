"""Causes on both stores (SPEC §16, §17): the same spans written to DuckDB and to current ClickHouse
in process (chdb) give the same window causes (with and without ``agent=``/``service=``, capped
or not) and the same cause for every trace — each origin kind, inferred handoff outcomes, a loop,
a hop-limit event, an absorbed retry."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reach_collector.query.cause import trace_cause
from reach_collector.query.causes import window_causes
from reach_collector.query.pricing import PriceTable
from reach_collector.store.base import TraceStore
from reach_collector.store.clickhouse.store import ClickHouseStore
from reach_collector.store.duckdb_store import DuckDBStore
from reach_otel import semconv as sc

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "metrics"))
from metrics_helpers import NOW_NS, new_span_id, new_trace_id, span, write  # noqa: E402

S = 1_000_000_000
MS = 1_000_000
PRICES = PriceTable({"small": {"input": 1.0, "output": 2.0}})


def _trace(end_ns: int, origin: str, service: str = "desk") -> list[dict[str, Any]]:
    """A failed trace (root → Triage → ...) whose origin is of kind ``origin``."""
    t = new_trace_id()
    root, triage = new_span_id(), new_span_id()

    def s(parent: str, op: str | None, at_ms: int, dur_ms: int, **kw: Any) -> dict[str, Any]:
        kw.setdefault("service", service)
        return span(t, operation=op, parent=parent, end_ns=end_ns - 1000 * MS + (at_ms + dur_ms) * MS,
                    duration_ms=dur_ms, **kw)  # fmt: skip

    rows = [
        span(
            t,
            operation=sc.OP_WORKFLOW,
            span_id=root,
            end_ns=end_ns,
            duration_ms=1000,
            error=True,
            service=service,
        ),
        s(root, sc.OP_AGENT, 10, 900, span_id=triage, agent="Triage", error=True),
        s(triage, sc.OP_CHAT, 20, 30, agent="Triage", model="small", input_tokens=100, output_tokens=10),
    ]
    if origin == "tool":
        billing = new_span_id()
        rows += [
            s(
                triage,
                sc.OP_HANDOFF,
                60,
                5,
                agent="Triage",
                handoff_source="Triage",
                handoff_target="Billing",
            ),
            s(triage, sc.OP_AGENT, 70, 800, span_id=billing, agent="Billing", error=True),
            s(
                billing,
                sc.OP_TOOL,
                80,
                20,
                agent="Billing",
                tool="query_invoice",
                error=True,
                error_type="Timeout",
            ),
            s(billing, sc.OP_TOOL, 110, 20, agent="Billing", tool="search_kb", name="execute_tool search_kb"),
            s(
                billing,
                sc.OP_CHAT,
                200,
                50,
                agent="Billing",
                model="small",
                input_tokens=500,
                output_tokens=50,
            ),
            s(
                billing,
                sc.OP_HANDOFF,
                300,
                5,
                agent="Billing",
                handoff_source="Billing",
                handoff_target="Tech",
            ),
        ]
    elif origin == "absorbed":
        helper = new_span_id()
        rows += [
            s(triage, sc.OP_AGENT, 30, 100, span_id=helper, agent="Helper"),
            s(helper, sc.OP_TOOL, 40, 10, agent="Helper", tool="lookup", error=True, error_type="KeyError"),
            s(triage, sc.OP_CHAT, 300, 50, agent="Triage", model="unpriced", input_tokens=7, output_tokens=3,
              error=True, error_type="RateLimit"),
        ]  # fmt: skip
    elif origin == "loop":
        rows.append(
            s(triage, sc.OP_HANDOFF, 50, 100, agent="Triage", handoff_source="Triage",
              handoff_target="Writer", loop_detected=True, error=True)
        )  # fmt: skip
    elif origin == "hop_limit":
        hop = s(triage, sc.OP_HANDOFF, 50, 100, agent="Triage", handoff_source="Triage",
                handoff_target="Escalation", handoff_status="rejected", error=True,
                attributes={sc.REACH_HANDOFF_TRANSITIONS: 1})  # fmt: skip
        hop["events"] = json.dumps(
            [{"name": sc.EVENT_HOP_LIMIT_EXCEEDED, "time_unix_nano": 1, "attributes": {}}]
        )
        rows.append(hop)
    else:  # a recorded handoff outcome
        rows.append(
            s(triage, sc.OP_HANDOFF, 50, 100, agent="Triage", handoff_source="Triage",
              handoff_target="Billing", handoff_status=origin, attributes={sc.REACH_HANDOFF_TRANSITIONS: 2})
        )  # fmt: skip
    return rows


def _rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    kinds = ["tool", "tool", "tool", "rejected", "failed", "expired", "absorbed", "loop", "hop_limit"]
    for i, kind in enumerate(kinds):
        rows += _trace(NOW_NS - (60 + 30 * i) * S, kind, service="chat" if kind == "loop" else "desk")
    rows += _trace(NOW_NS - 3 * 3600 * S, "tool")  # before the 15-minute window
    return rows


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TraceStore, TraceStore]]:
    rows = _rows()
    duck = DuckDBStore(tmp_path_factory.mktemp("causes-duck") / "traces.duckdb")
    chdb = ClickHouseStore.in_process(tmp_path_factory.mktemp("causes-chdb"))
    for store in (duck, chdb):
        write(store, rows)  # type: ignore[arg-type]
    yield duck, chdb
    duck.close()
    chdb.close()


def same(a: Any, b: Any, path: str = "$") -> None:
    if isinstance(a, float) or isinstance(b, float):
        assert a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), path
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), f"{path}: {sorted(a)} != {sorted(b)}"
        for k in a:
            same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), f"{path}: {a!r} != {b!r}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{path}[{i}]")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


@pytest.mark.parametrize(
    "kw",
    [{}, {"agent": "Billing"}, {"agent": "Triage"}, {"service": "chat"}, {"max_traces": 3}],
    ids=["all", "agent=Billing", "agent=Triage", "service=chat", "capped"],
)
def test_window_causes_same_on_both(stores: tuple[TraceStore, TraceStore], kw: dict[str, Any]) -> None:
    duck, chdb = stores
    want = window_causes(duck, NOW_NS, 900, PRICES, **kw)
    same(window_causes(chdb, NOW_NS, 900, PRICES, **kw), want)
    assert want["causes"], want


def test_every_kind_and_the_same_cause_per_trace(stores: tuple[TraceStore, TraceStore]) -> None:
    duck, chdb = stores
    body = window_causes(duck, NOW_NS, 900, PRICES)
    assert body["failed_traces"] == 9 and not body["sampled"]
    kinds = {(c["kind"], c["traces"]) for c in body["causes"]}
    assert kinds == {
        ("tool_error", 3),
        ("handoff_rejected", 1),
        ("handoff_failed", 1),
        ("handoff_expired", 1),
        ("llm_error", 1),  # the absorbed tool error is not the origin
        ("loop", 1),
        ("hop_limit", 1),
    }
    for trace_id in {t for c in body["causes"] for t in c["example_trace_ids"]}:
        want = trace_cause(trace_id, duck.trace_spans(trace_id) or [], PRICES).json()
        same(trace_cause(trace_id, chdb.trace_spans(trace_id) or [], PRICES).json(), want)

"""Multi-agent metrics: handoff rates (with and without the state machine), hops per request, loop
rate, per-agent tokens, token share and cost, on traces whose answers are known by construction."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from metrics_helpers import NOW_NS, new_span_id, new_trace_id, span, write

from reach_collector.query import metrics
from reach_collector.store.duckdb_store import DuckDBStore
from reach_otel import semconv as sc

S = 1_000_000_000
WINDOW_S = 300
PRICES = {"gpt-4o-mini": {"input": 0.15, "output": 0.60}, "big-model": {"input": 2.5, "output": 10.0}}


class Trace:
    """Spans of one request at offsets (seconds) from ``base``; a workflow root spans them all."""

    def __init__(self, ago_s: float) -> None:
        self.id = new_trace_id()
        self.base = NOW_NS - int(ago_s * S)
        self.root = new_span_id()
        self.rows: list[dict[str, Any]] = []
        self.last = 0.0

    def _add(self, operation: str | None, start: float, end: float, **cols: Any) -> str:
        sid = new_span_id()
        cols.setdefault("parent", self.root)
        self.last = max(self.last, end)
        self.rows.append(
            span(
                self.id,
                operation=operation,
                span_id=sid,
                end_ns=self.base + int(end * S),
                duration_ms=(end - start) * 1000,
                **cols,
            )
        )
        return sid

    def agent(self, name: str, start: float, end: float, error: bool = False) -> str:
        # Agent spans carry their LLM calls' summed tokens: they must not be counted twice.
        return self._add(
            sc.OP_AGENT, start, end, agent=name, error=error, input_tokens=99_999, output_tokens=9_999
        )

    def handoff(
        self,
        parent: str,
        source: str,
        target: str,
        at: float,
        status: str,
        transitions: int | None,
        mode: str = "delegate",
        loop: bool = False,
    ) -> None:
        attrs = {} if transitions is None else {sc.REACH_HANDOFF_TRANSITIONS: transitions}
        self._add(
            sc.OP_HANDOFF,
            at,
            at + 0.1,
            parent=parent,
            agent=source,
            handoff_source=source,
            handoff_target=target,
            handoff_status=status,
            handoff_mode=mode,
            loop_detected=loop,
            attributes=attrs,
        )

    def llm(self, parent: str, at: float, agent: str | None, model: str, tin: int, tout: int) -> str:
        return self._add(
            sc.OP_CHAT,
            at,
            at + 0.2,
            parent=parent,
            agent=agent,
            model=model,
            input_tokens=tin,
            output_tokens=tout,
        )

    def tool(self, parent: str, at: float, agent: str | None) -> str:
        return self._add(sc.OP_TOOL, at, at + 0.5, parent=parent, agent=agent, tool="lookup")

    def finish(self) -> list[dict[str, Any]]:
        root = span(
            self.id, operation=sc.OP_WORKFLOW, span_id=self.root, end_ns=self.base + int(self.last * S) + 1
        )
        root["start_ns"] = self.base
        root["duration_ms"] = (root["end_ns"] - root["start_ns"]) / 1e6
        return [*self.rows, root]


def relay(
    ago_s: float,
    status: str,
    transitions: int | None,
    *,
    mode: str = "delegate",
    target_error: bool = False,
    target_runs: bool = True,
) -> Trace:
    """A → handoff → B (B may fail, or never run)."""
    t = Trace(ago_s)
    a = t.agent("A", 0, 2)
    t.handoff(a, "A", "B", 1.5, status, transitions, mode)
    if target_runs:
        t.agent("B", 2.5, 4, error=target_error)
    return t


def _scenario() -> tuple[list[Trace], dict[str, Any]]:
    traces: list[Trace] = []
    # With the state machine: the recorded status is the answer.
    t1 = relay(100, "committed", 3)
    t1.llm(t1.rows[0]["span_id"], 0.5, "A", "gpt-4o-mini", 1000, 200)
    t1.llm(t1.rows[-1]["span_id"], 3.0, "B", "local-llama", 500, 100)
    traces.append(t1)
    t2 = Trace(120)  # ping-pong A → B → A → B: three handoffs, the last detects the loop
    a1 = t2.agent("A", 0, 1)
    t2.llm(a1, 0.2, "A", "gpt-4o-mini", 1000, 200)
    t2.handoff(a1, "A", "B", 0.8, "committed", 3)
    b1 = t2.agent("B", 1, 2)
    t2.llm(b1, 1.2, "B", "gpt-4o-mini", 100, 10)
    t2.handoff(b1, "B", "A", 1.8, "committed", 3)
    a2 = t2.agent("A", 2, 3)
    t2.handoff(a2, "A", "B", 2.8, "committed", 3, loop=True)
    t2.agent("B", 3, 4)
    traces.append(t2)
    t3 = Trace(90)  # no handoff; an LLM call outside any agent is nobody's tokens
    t3.agent("E", 0, 1)
    t3.llm(t3.root, 1.5, None, "gpt-4o-mini", 50, 5)
    traces.append(t3)
    traces += [
        relay(80, "rejected", 1, mode="escalate", target_runs=False),
        relay(70, "unknown", 1),  # timed out
        relay(60, "expired", 1),
        relay(50, "failed", 3, target_error=True),
        relay(40, "running", 2),
    ]
    # Without the state machine (transitions 0 or absent): the target's next agent span decides.
    t4 = Trace(110)
    a = t4.agent("A", 0, 2)
    t4.handoff(a, "A", "C", 1.5, "unknown", 0, mode="takeover")
    c = t4.agent("C", 2.5, 4)
    tool = t4.tool(c, 2.6, None)
    t4.llm(tool, 2.7, None, "gpt-4o-mini", 300, 30)  # no reach.agent.name: the nearest agent ancestor
    traces.append(t4)
    traces.append(relay(105, "unknown", None, target_error=True))  # → failed
    traces.append(relay(95, "unknown", 0, mode="escalate", target_runs=False))  # → stays unknown
    t14 = Trace(85)  # B failed *before* the handoff; its next run after the handoff is OK → committed
    a = t14.agent("A", 0, 3)
    t14.agent("B", 0.5, 1, error=True)
    t14.handoff(a, "A", "B", 2, "unknown", 0)
    t14.agent("B", 3.1, 4)
    traces.append(t14)
    # A long request: its handoff ended before the window, its last agent span inside it (1 hop).
    t12 = Trace(500)
    a = t12.agent("A", 0, 1)
    t12.handoff(a, "A", "B", 0.5, "committed", 3)
    t12.agent("B", 1, 450)
    traces.append(t12)
    # Entirely before the window: not counted anywhere.
    old = relay(2000, "committed", 3)
    old.llm(old.rows[0]["span_id"], 0.5, "A", "gpt-4o-mini", 7777, 777)
    traces.append(old)

    # 13 handoffs end in the window; their effective statuses:
    statuses = ["committed"] * 4 + ["rejected", "unknown", "expired", "failed", "running"]
    statuses += ["committed", "failed", "unknown", "committed"]
    hops = [1, 3, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]  # 13 requests with an agent span in the window
    expected = {"statuses": statuses, "escalations": 2, "hops": hops, "loops": 1}
    return traces, expected


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DuckDBStore, dict[str, Any]]]:
    store = DuckDBStore(Path(tmp_path_factory.mktemp("agents")) / "traces.duckdb")
    traces, expected = _scenario()
    rows = [r for t in traces for r in t.finish()]
    rows.sort(key=lambda r: r["end_ns"])  # arrival order
    write(store, rows[: len(rows) // 2])
    write(store, rows[len(rows) // 2 :])
    yield store, expected
    store.close()


def test_handoff_rates(scenario: tuple[DuckDBStore, dict[str, Any]]) -> None:
    store, expected = scenario
    h = metrics.agents(store, NOW_NS, WINDOW_S, PRICES)["handoffs"]
    statuses = expected["statuses"]
    total = len(statuses)
    committed = statuses.count("committed")
    accepted = sum(s in ("accepted", "running", "committed", "failed") for s in statuses)
    assert (h["total"], h["committed"]) == (13, 6) == (total, committed)
    assert h["efficiency"] == pytest.approx(6 / 13)
    assert h["acceptance_rate"] == pytest.approx(accepted / total) == pytest.approx(9 / 13)
    assert h["commit_rate"] == pytest.approx(6 / 9)
    assert h["unknown_rate"] == pytest.approx(3 / 13)
    assert h["escalation_rate"] == pytest.approx(expected["escalations"] / total)


def test_hops_and_loops(scenario: tuple[DuckDBStore, dict[str, Any]]) -> None:
    store, expected = scenario
    body = metrics.agents(store, NOW_NS, WINDOW_S, PRICES)
    hops = np.array(expected["hops"], dtype=float)
    assert body["hops"]["traces"] == len(hops) == 13
    for name, q in (("p50", 50), ("p95", 95), ("p99", 99)):
        assert body["hops"][name] == pytest.approx(float(np.percentile(hops, q)), abs=1e-9)
    assert body["hops"]["share_le_2"] == pytest.approx(12 / 13)
    assert body["loops"] == {"traces_with_loop": 1, "rate": pytest.approx(1 / 13)}


def test_tokens_share_and_cost(scenario: tuple[DuckDBStore, dict[str, Any]]) -> None:
    store, _ = scenario
    body = metrics.agents(store, NOW_NS, WINDOW_S, PRICES)
    agents = {a["agent"]: a for a in body["agents"]}
    assert set(agents) == {"A", "B", "C", "E"}
    tokens = {name: (a["input_tokens"], a["output_tokens"]) for name, a in agents.items()}
    assert tokens == {"A": (2000, 400), "B": (600, 110), "C": (300, 30), "E": (0, 0)}
    total = 2400 + 710 + 330
    assert agents["A"]["token_share"] == pytest.approx(2400 / total)
    assert agents["B"]["token_share"] == pytest.approx(710 / total)
    assert agents["C"]["token_share"] == pytest.approx(330 / total)
    assert agents["E"]["token_share"] == 0
    assert agents["A"]["cost_usd"] == pytest.approx((2000 * 0.15 + 400 * 0.60) / 1e6)
    assert agents["C"]["cost_usd"] == pytest.approx((300 * 0.15 + 30 * 0.60) / 1e6)
    # B used a model missing from the price table: its cost is unknown (null), never 0.
    assert agents["B"]["cost_usd"] is None
    assert agents["B"]["unpriced_models"] == ["local-llama"]
    assert agents["E"]["cost_usd"] == 0.0
    assert body["unattributed_tokens"] == {"input_tokens": 50, "output_tokens": 5}
    assert [a["agent"] for a in body["agents"]] == ["A", "B", "C", "E"]  # biggest consumer first


def test_without_a_price_table_every_spending_agent_is_unpriced(
    scenario: tuple[DuckDBStore, dict[str, Any]],
) -> None:
    store, _ = scenario
    agents = {a["agent"]: a for a in metrics.agents(store, NOW_NS, WINDOW_S, {})["agents"]}
    assert [agents[n]["cost_usd"] for n in ("A", "B", "C")] == [None, None, None]
    assert agents["E"]["cost_usd"] == 0.0


def test_empty_window_is_zero_and_null(scenario: tuple[DuckDBStore, dict[str, Any]]) -> None:
    store, _ = scenario
    body = metrics.agents(store, NOW_NS - 30 * 86400 * S, WINDOW_S, PRICES)
    h = body["handoffs"]
    assert (h["total"], h["committed"]) == (0, 0)
    for rate in ("efficiency", "acceptance_rate", "commit_rate", "unknown_rate", "escalation_rate"):
        assert h[rate] is None
    assert body["hops"] == {"traces": 0, "p50": None, "p95": None, "p99": None, "share_le_2": None}
    assert body["loops"] == {"traces_with_loop": 0, "rate": None}
    assert body["agents"] == []

"""Golden metrics (calls, ok, errors, success rate, throughput, p50/p95/p99) against numpy, for
every `by`, on seeded synthetic spans stored in a real DuckDB file."""

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

WINDOW_S = 300
S = 1_000_000_000
AGENTS = ["TriageAgent", "BillingAgent", "TechAgent"]
TOOLS = ["query_invoice", "search_kb"]
MODELS = ["gpt-4o-mini", "local-llama"]
SERVICES = ["support-app", "billing-svc"]
LLM_OPS = [sc.OP_CHAT, sc.OP_TEXT_COMPLETION, sc.OP_EMBEDDINGS]


def _rows(rng: np.random.Generator) -> list[dict[str, Any]]:
    """~2400 spans ending over the last 10 minutes (half outside the 5-minute window)."""
    rows: list[dict[str, Any]] = []

    def end() -> int:
        return NOW_NS - int(rng.integers(0, 600 * S))

    def duration(scale: float) -> float:
        return round(float(rng.lognormal(np.log(scale), 0.8)), 3)  # whole microseconds

    for _ in range(400):
        trace = new_trace_id()
        agent = AGENTS[int(rng.integers(len(AGENTS)))]
        service = SERVICES[int(rng.integers(len(SERVICES)))]
        agent_id = new_span_id()
        failing = {"BillingAgent": 0.3}.get(agent, 0.05)
        rows.append(
            span(
                trace,
                operation=sc.OP_AGENT,
                span_id=agent_id,
                end_ns=end(),
                duration_ms=duration(400),
                error=bool(rng.random() < failing),
                agent=agent,
                service=service,
            )
        )
        for _ in range(int(rng.integers(1, 4))):
            rows.append(
                span(
                    trace,
                    operation=LLM_OPS[int(rng.integers(len(LLM_OPS)))],
                    parent=agent_id,
                    end_ns=end(),
                    duration_ms=duration(250),
                    error=bool(rng.random() < 0.1),
                    agent=agent,
                    model=MODELS[int(rng.integers(len(MODELS)))],
                    service=service,
                )
            )
        rows.append(
            span(
                trace,
                operation=sc.OP_TOOL,
                parent=agent_id,
                end_ns=end(),
                duration_ms=duration(30),
                error=bool(rng.random() < 0.2),
                agent=agent,
                tool=TOOLS[int(rng.integers(len(TOOLS)))],
                service=service,
            )
        )
        # A handoff carries gen_ai.agent.name (the source) but is never an agent call.
        rows.append(
            span(
                trace,
                operation=sc.OP_HANDOFF,
                parent=agent_id,
                end_ns=end(),
                duration_ms=1.0,
                agent=agent,
                handoff_source=agent,
                handoff_target="TechAgent",
                service=service,
            )
        )
        rows.append(span(trace, operation=None, end_ns=end(), duration_ms=5.0, service=service))
    # Window edges: (now − window, now] — the span ending exactly at now − window is out.
    rows.append(span(new_trace_id(), operation=sc.OP_AGENT, end_ns=NOW_NS, agent="EdgeAgent", service="edge"))
    rows.append(
        span(
            new_trace_id(),
            operation=sc.OP_AGENT,
            end_ns=NOW_NS - WINDOW_S * S,
            agent="EdgeAgent",
            service="edge",
        )
    )
    rows.append(
        span(new_trace_id(), operation=sc.OP_AGENT, end_ns=NOW_NS + 1, agent="EdgeAgent", service="edge")
    )
    return rows


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DuckDBStore, list[dict[str, Any]]]]:
    store = DuckDBStore(Path(tmp_path_factory.mktemp("golden")) / "traces.duckdb")
    rows = _rows(np.random.default_rng(20260101))
    for i in range(0, len(rows), 500):  # several commits, like ingest
        write(store, rows[i : i + 500])
    yield store, rows
    store.close()


def _counts(by: str, r: dict[str, Any]) -> bool:
    """§11: what counts as a call for each `by`."""
    op = r["operation"]
    if by in ("agent", "service"):
        return op == sc.OP_AGENT
    if by == "tool":
        return op == sc.OP_TOOL
    if by == "model":
        return op in sc.LLM_OPERATIONS
    return op is not None


def _stats_of(members: list[dict[str, Any]], minutes: float) -> dict[str, Any]:
    durations = np.array([r["duration_ms"] for r in members])
    errors = sum(r["status_code"] == 2 for r in members)
    ok = len(members) - errors
    p50, p95, p99 = np.percentile(durations, [50, 95, 99])
    return {
        "calls": len(members),
        "ok": ok,
        "errors": errors,
        "success_rate": ok / len(members),
        "throughput_per_min": ok / minutes,
        "p50_ms": p50,
        "p95_ms": p95,
        "p99_ms": p99,
    }


def _in(rows: list[dict[str, Any]], by: str, lo: int, hi: int) -> list[dict[str, Any]]:
    return [r for r in rows if lo < r["end_ns"] <= hi and _counts(by, r)]


def _expected(rows: list[dict[str, Any]], by: str, lo: int, hi: int) -> dict[Any, dict[str, Any]]:
    groups: dict[Any, list[dict[str, Any]]] = {}
    for r in _in(rows, by, lo, hi):
        groups.setdefault(r[by], []).append(r)
    return {key: _stats_of(members, (hi - lo) / S / 60) for key, members in groups.items()}


def _assert_stats(got: dict[str, Any], want: dict[str, Any]) -> None:
    for field in ("calls", "ok", "errors"):
        assert got[field] == want[field], field
    assert got["success_rate"] == pytest.approx(want["success_rate"], abs=1e-12)
    assert got["throughput_per_min"] == pytest.approx(want["throughput_per_min"], abs=1e-12)
    for field in ("p50_ms", "p95_ms", "p99_ms"):
        assert abs(got[field] - want[field]) < 0.01, field


@pytest.mark.parametrize("by", metrics.BY_VALUES)
def test_golden_matches_numpy_for_every_by(seeded: tuple[DuckDBStore, list[dict[str, Any]]], by: str) -> None:
    store, rows = seeded
    body = metrics.golden(store, NOW_NS, WINDOW_S, by)
    want = _expected(rows, by, NOW_NS - WINDOW_S * S, NOW_NS)
    assert body["by"] == by and body["window_s"] == WINDOW_S
    assert body["until"] == "2027-01-15T08:00:00Z"
    got = {g["key"]: g for g in body["groups"]}
    assert set(got) == set(want)
    assert len(want) >= 2
    for key, stats in want.items():
        _assert_stats(got[key], stats)
    # The total row covers every call of every group, percentiles included.
    _assert_stats(body["total"], _stats_of(_in(rows, by, NOW_NS - WINDOW_S * S, NOW_NS), WINDOW_S / 60))


def test_handoffs_are_not_agent_calls(seeded: tuple[DuckDBStore, list[dict[str, Any]]]) -> None:
    store, rows = seeded
    by_agent = metrics.golden(store, NOW_NS, 600, "agent")
    in_window = [r for r in rows if NOW_NS - 600 * S < r["end_ns"] <= NOW_NS]
    agent_calls = sum(r["operation"] == sc.OP_AGENT for r in in_window)
    assert sum(g["calls"] for g in by_agent["groups"]) == agent_calls
    by_op = {g["key"]: g for g in metrics.golden(store, NOW_NS, 600, "operation")["groups"]}
    assert by_op[sc.OP_HANDOFF]["calls"] == sum(r["operation"] == sc.OP_HANDOFF for r in in_window)


def test_window_edges_count_by_end_time(seeded: tuple[DuckDBStore, list[dict[str, Any]]]) -> None:
    store, _ = seeded
    edge = {g["key"]: g for g in metrics.golden(store, NOW_NS, WINDOW_S, "agent")["groups"]}["EdgeAgent"]
    assert edge["calls"] == 1  # the one ending at now; not the one at now − window, nor after now


def test_empty_window_has_zero_calls_and_null_rates(seeded: tuple[DuckDBStore, list[dict[str, Any]]]) -> None:
    store, _ = seeded
    for by in metrics.BY_VALUES:
        body = metrics.golden(store, NOW_NS - 86400 * S, WINDOW_S, by)
        assert body["groups"] == []
        total = body["total"]
        assert (total["calls"], total["ok"], total["errors"]) == (0, 0, 0)
        assert total["success_rate"] is None
        assert total["p50_ms"] is None and total["p95_ms"] is None and total["p99_ms"] is None
    assert metrics.agent_window_stats(store, NOW_NS - 86400 * S, 60) == {}


def test_unknown_by_is_an_error(seeded: tuple[DuckDBStore, list[dict[str, Any]]]) -> None:
    with pytest.raises(ValueError, match="by must be one of"):
        metrics.golden(seeded[0], NOW_NS, WINDOW_S, "agent; DROP TABLE spans")


def test_agent_window_stats_for_alerting(seeded: tuple[DuckDBStore, list[dict[str, Any]]]) -> None:
    store, rows = seeded
    got = metrics.agent_window_stats(store, NOW_NS, 60)
    want = _expected(rows, "agent", NOW_NS - 60 * S, NOW_NS)
    assert set(got) == set(want)
    for agent, stats in want.items():
        assert got[agent]["calls"] == stats["calls"]
        assert got[agent]["errors"] == stats["errors"]
        assert abs(got[agent]["p99_ms"] - stats["p99_ms"]) < 0.01
        services = [
            r["service"]
            for r in rows
            if r["agent"] == agent
            and r["operation"] == sc.OP_AGENT
            and NOW_NS - 60 * S < r["end_ns"] <= NOW_NS
        ]
        assert services.count(got[agent]["service"]) == max(services.count(s) for s in set(services))


@pytest.mark.parametrize("metric", ["calls", "errors", "success_rate", "throughput", "p95", "p99"])
def test_timeseries_per_minute(seeded: tuple[DuckDBStore, list[dict[str, Any]]], metric: str) -> None:
    store, rows = seeded
    since = NOW_NS - 600 * S
    body = metrics.timeseries(store, NOW_NS, since, 60, metric, "agent")
    series = {s["key"]: s["points"] for s in body["series"]}
    for agent in AGENTS:
        points = series[agent]
        assert len(points) == 10
        for i, point in enumerate(points):
            hi = since + (i + 1) * 60 * S
            assert point["t_ns"] == hi
            stats = _expected(rows, "agent", hi - 60 * S, hi).get(agent)
            value = point["value"]
            if stats is None:
                assert value == (0 if metric in ("calls", "errors", "throughput") else None)
                continue
            want = {
                "calls": stats["calls"],
                "errors": stats["errors"],
                "success_rate": stats["success_rate"],
                "throughput": stats["ok"],  # ok per minute, one-minute steps
                "p95": stats["p95_ms"],
                "p99": stats["p99_ms"],
            }[metric]
            assert value == pytest.approx(want, abs=0.01)


def test_timeseries_rejects_bad_arguments(seeded: tuple[DuckDBStore, list[dict[str, Any]]]) -> None:
    store, _ = seeded
    with pytest.raises(ValueError, match="metric must be one of"):
        metrics.timeseries(store, NOW_NS, NOW_NS - 600 * S, 60, "latency", "agent")
    with pytest.raises(ValueError, match="too many points"):
        metrics.timeseries(store, NOW_NS, NOW_NS - 86400 * S, 1, "calls", "agent")


def test_a_tool_call_traced_on_both_sides_counts_once(tmp_path: Path) -> None:
    """§11: the caller's CLIENT span counts the call; the server's SERVER span under it does not. A
    served call with no traced caller (no parent) counts, and errors follow the counted side."""
    store = DuckDBStore(tmp_path / "traces.duckdb")
    try:
        rows = []
        for error in (False, True):
            trace, client = new_trace_id(), new_span_id()
            rows.append(span(trace, operation=sc.OP_TOOL, end_ns=NOW_NS - S, tool="get_forecast",
                             kind=3, span_id=client, error=error))  # fmt: skip
            rows.append(span(trace, operation=sc.OP_TOOL, end_ns=NOW_NS - 2 * S, tool="get_forecast",
                             kind=2, parent=client, error=error))  # fmt: skip
        rows.append(span(new_trace_id(), operation=sc.OP_TOOL, end_ns=NOW_NS - S, tool="get_budget", kind=2))
        write(store, rows)
        got = metrics.golden(store, NOW_NS, WINDOW_S, by="tool")
        assert {g["key"]: (g["calls"], g["errors"]) for g in got["groups"]} == {
            "get_forecast": (2, 1),
            "get_budget": (1, 0),
        }
        ops = metrics.golden(store, NOW_NS, WINDOW_S, by="operation")["groups"]
        assert [(g["key"], g["calls"]) for g in ops] == [(sc.OP_TOOL, 3)]
    finally:
        store.close()

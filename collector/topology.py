"""The agent topology over a window (SPEC §15): agents as nodes (calls, errors, p95, tokens, cost)
and handoffs as edges ``source → target`` (outcomes by the §11 rule, p95 of the handoff spans,
loops). Pure queries, ``now`` an argument, bounded by the window like the other metrics.

A span counts in the window ``(now − window, now]`` by its end time. Outcomes come from
``handoff_outcome.outcomes_sql`` (the one SQL form of the rule), tokens and cost from
``metrics.agent_tokens`` (an LLM span belongs to its agent attribute, else its nearest agent
ancestor), so the topology never disagrees with ``/api/metrics/agents``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from reach_collector.handoff_outcome import ERROR_CODE, outcomes_sql
from reach_collector.metrics import agent_tokens, trace_lookback
from reach_collector.store.base import TraceStore
from reach_collector.views import iso

from reach_otel import handoff_state as hf
from reach_otel import semconv as sc

__all__ = ["EDGE_COUNTS", "edges", "topology"]

_NS: Final = 1_000_000_000
# Edge fields counted from the outcome: each is the handoffs whose status is one of these.
EDGE_COUNTS: Final[Mapping[str, tuple[str, ...]]] = {
    "committed": (hf.COMMITTED,),
    "rejected": (hf.REJECTED,),
    "failed": (hf.FAILED,),
    "unknown": (hf.UNKNOWN, hf.EXPIRED),  # no outcome ever came (§11's unknown_rate)
}


def _service(service: str | None) -> tuple[str, list[Any]]:
    return (" AND service = ?", [service]) if service is not None else ("", [])


def edges(
    store: TraceStore, lo: int, hi: int, since: int, service: str | None = None
) -> list[dict[str, Any]]:
    """One entry per ``(source, target)`` of the handoff spans ending in ``(lo, hi]``."""
    where, where_params = _service(service)
    cte, params = outcomes_sql(
        lo,
        hi,
        since,
        ("handoff_source", "handoff_target", "handoff_mode", "duration_ms", "loop_detected"),
        where,
        where_params,
    )
    rows = store.query(
        f"{cte} SELECT handoff_source, handoff_target, count(*), histogram(status), histogram(handoff_mode),"
        " count(*) FILTER (WHERE inferred), quantile_cont(duration_ms, 0.95),"
        " count(*) FILTER (WHERE loop_detected)"
        " FROM e GROUP BY ALL ORDER BY 3 DESC, 1 NULLS LAST, 2 NULLS LAST",
        params,
    )
    out = []
    for source, target, n, statuses, modes, inferred, p95, loops in rows:
        statuses = {str(k): int(v) for k, v in (statuses or {}).items()}
        modes = {str(k): int(v) for k, v in (modes or {}).items()}
        edge: dict[str, Any] = {
            "source": source,
            "target": target,
            # The edge's usual mode (most handoffs; ties by name); all of them under ``modes``.
            "mode": min(modes, key=lambda m: (-modes[m], m)) if modes else None,
            "handoffs": int(n),
        }
        for field, among in EDGE_COUNTS.items():
            edge[field] = sum(statuses.get(s, 0) for s in among)
        edge.update(
            inferred=int(inferred),
            p95_ms=p95,
            loops=int(loops),
            statuses=dict(sorted(statuses.items())),
            modes=dict(sorted(modes.items())),
        )
        out.append(edge)
    return out


def _agent_calls(store: TraceStore, lo: int, hi: int, service: str | None) -> dict[str, dict[str, Any]]:
    where, where_params = _service(service)
    rows = store.query(
        "SELECT agent, count(*), count(*) FILTER (WHERE status_code = ?), quantile_cont(duration_ms, 0.95)"
        f" FROM spans WHERE end_ns > ? AND end_ns <= ? AND operation = ? AND agent IS NOT NULL{where}"
        " GROUP BY agent",
        [ERROR_CODE, lo, hi, sc.OP_AGENT, *where_params],
    )
    return {agent: {"calls": int(n), "errors": int(e), "p95_ms": p95} for agent, n, e, p95 in rows}


def topology(
    store: TraceStore,
    now_ns: int,
    window_s: float,
    prices: Mapping[str, Mapping[str, float]] | None = None,
    service: str | None = None,
) -> dict[str, Any]:
    """The ``GET /api/topology`` body: nodes by calls, edges by handoffs (both most first).

    Every agent that made a call, spent tokens or sits at either end of a handoff is a node;
    ``cost_usd`` is null when one of its models is not in the price table (unknown, never 0)."""
    lo, hi = now_ns - int(window_s * _NS), now_ns
    since = trace_lookback(store, lo, hi)
    calls = _agent_calls(store, lo, hi, service)
    found = edges(store, lo, hi, since, service)
    tokens = {a["agent"]: a for a in agent_tokens(store, lo, hi, since, prices or {}, service)["agents"]}
    names = set(calls) | set(tokens)
    names |= {name for e in found for name in (e["source"], e["target"]) if name is not None}
    nodes = []
    for agent in names:
        stats = calls.get(agent, {"calls": 0, "errors": 0, "p95_ms": None})
        spent = tokens.get(agent, {})
        nodes.append(
            {
                "agent": agent,
                **stats,
                "input_tokens": int(spent.get("input_tokens", 0)),
                "output_tokens": int(spent.get("output_tokens", 0)),
                "cost_usd": spent.get("cost_usd", 0.0) if spent else 0.0,
            }
        )
    nodes.sort(key=lambda n: (-n["calls"], n["agent"]))
    return {"window_s": window_s, "until": iso(now_ns), "service": service, "nodes": nodes, "edges": found}

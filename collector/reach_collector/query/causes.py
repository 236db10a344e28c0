"""A window's causes (SPEC §17): the failed traces whose root ended in the window, each read for its
cause (``query.cause``), grouped by (agent, kind, name, error type) and ranked by traces.

Two reads, each bounded, over whichever store (the SQL is in the subset both dialects take): the
failed roots (a parentless ERROR span ending in the window), newest first and at most
``max_traces`` of them; then every span of those traces at once, at most ``MAX_SPANS`` rows (the
trace the cut falls in is left out whole). When either bound cuts, the answer says
``"sampled": true``: its causes are those of the newest failed traces. ``agent=`` and ``service=``
narrow the roots to traces with a span of that agent or service, then keep the failed traces whose
path (root to origin) has one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from reach_collector.query.cause import CAUSE_COLUMNS, Cause, trace_cause
from reach_collector.query.pricing import PriceTable
from reach_collector.query.views import iso
from reach_collector.store.base import TraceStore
from reach_collector.store.dialect import dialect_of
from reach_collector.text.printable import error_name
from reach_otel import semconv as sc

__all__ = ["EXAMPLES", "MAX_SPANS", "MAX_TRACES", "rank", "sentence", "window_causes"]

_NS: Final = 1_000_000_000
_ERROR: Final = 2
MAX_TRACES: Final = 200  # failed traces analysed per answer, the newest
MAX_SPANS: Final = 20_000  # span rows read per answer
EXAMPLES: Final = 5  # example trace ids per cause

# Attributes and events are read only where the cause looks at them (query.cause.CAUSE_COLUMNS).
_READ: Final = {
    "attributes": "CASE WHEN operation = ? THEN attributes ELSE NULL END AS attributes",
    "events": f"CASE WHEN status_code = {_ERROR} OR operation = ? THEN events ELSE NULL END AS events",
}


def _roots_sql(
    store: TraceStore, lo: int, hi: int, agent: str | None, service: str | None
) -> tuple[str, list[Any]]:
    """Failed roots ending in ``(lo, hi]``, one row per trace: (trace_id, root end, root start)."""
    roots = "SELECT trace_id, start_ns, end_ns FROM spans WHERE end_ns > ? AND end_ns <= ?"
    roots += f" AND parent_span_id IS NULL AND status_code = {_ERROR}"
    params: list[Any] = [lo, hi]
    having: list[str] = []
    having_params: list[Any] = []
    for column, value in (("agent", agent), ("service", service)):  # columns from this list only
        if value is not None:
            # the trace's spans start no earlier than the earliest failed root (its parent)
            having.append(
                f" AND trace_id IN (SELECT trace_id FROM spans WHERE {column} = ?"
                " AND end_ns >= (SELECT min(start_ns) FROM {r}) AND start_ns <= ?)"
            )
            having_params += [value, hi]
    body = (
        "SELECT trace_id, max(end_ns) AS e, min(start_ns) AS s FROM ("
        + roots
        + "".join(having)
        + ") GROUP BY trace_id"
    )
    return dialect_of(store).compose([("r", roots, params)], body, [*params, *having_params])


def _spans_sql(trace_ids: Sequence[str], since: int, hi: int, limit: int) -> tuple[str, list[Any]]:
    columns = ", ".join(_READ.get(c, c) for c in CAUSE_COLUMNS)
    marks = ", ".join("?" * len(trace_ids))
    sql = (
        f"SELECT {columns} FROM spans WHERE trace_id IN ({marks}) AND end_ns >= ? AND start_ns <= ?"
        " ORDER BY trace_id LIMIT ?"
    )
    return sql, [sc.OP_HANDOFF, sc.OP_HANDOFF, *trace_ids, since, hi, limit]


def window_causes(
    store: TraceStore,
    now_ns: int,
    window_s: float,
    prices: PriceTable,
    agent: str | None = None,
    service: str | None = None,
    max_traces: int = MAX_TRACES,
) -> dict[str, Any]:
    """The §17 answer for ``(now − window, now]``."""
    lo, hi = now_ns - int(window_s * _NS), now_ns
    roots, params = _roots_sql(store, lo, hi, agent, service)
    found = store.query(f"{roots} ORDER BY e DESC, trace_id LIMIT ?", [*params, max_traces + 1])
    sampled = len(found) > max_traces
    found = found[:max_traces]
    causes: list[Cause] = []
    if found:
        ended = {str(t): int(e) for t, e, _ in found}
        since = min(int(s) for _, _, s in found)  # a trace's spans end after its root starts
        sql, sql_params = _spans_sql(list(ended), since, hi, MAX_SPANS + 1)
        rows = store.query(sql, sql_params)
        if len(rows) > MAX_SPANS:  # the last trace may be cut: leave it out whole
            sampled = True
            last = rows[-1][0]
            rows = [r for r in rows if r[0] != last]
        by_trace: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            by_trace.setdefault(row[0], []).append(dict(zip(CAUSE_COLUMNS, row, strict=True)))
        for trace_id in sorted(by_trace, key=lambda t: (-ended[t], t)):
            cause = trace_cause(trace_id, by_trace[trace_id], prices)
            if not cause.failed:
                continue
            if agent is not None and agent not in cause.path_agents:
                continue
            if service is not None and service not in cause.path_services:
                continue
            causes.append(cause)
    ranked = rank(causes)
    return {
        "window_s": window_s,
        "until": iso(now_ns),
        "failed_traces": len(causes),
        "sampled": sampled,
        "max_traces": max_traces,
        "causes": ranked,
        "summary": sentence(ranked[0], agent) if ranked else None,
    }


_WHAT: Final = {
    "tool_error": "tool {}",
    "llm_error": "LLM call {}",
    "agent_error": "agent {}",
    "handoff_rejected": "handoff to {} (rejected)",
    "handoff_failed": "handoff to {} (failed)",
    "handoff_expired": "handoff to {} (expired)",
    "loop": "a handoff loop (handoff to {})",
    "hop_limit": "the hop limit (handoff to {})",
    "span_error": "span {}",
}


def sentence(cause: dict[str, Any], agent: str | None = None) -> str:
    """One ranked cause in a sentence: ``71 % of BillingAgent's failures start at tool
    query_invoice (TimeoutError); TechSupport never ran in 40 traces; $3.20 wasted`` (``agent``:
    whose failures they are, when the causes were asked for one agent)."""
    what = _WHAT.get(cause["kind"], cause["kind"] + " {}").format(cause["name"] or "?")
    if cause["error_type"]:
        what += f" ({error_name(cause['error_type'])})"
    if cause["agent"] and cause["agent"] != agent:
        what += f" in {cause['agent']}"
    whose = f"{agent}'s failures" if agent else "failed traces"
    parts = [f"{round(cause['share'] * 100)} % of {whose} start at {what}"]
    for never in cause["never_ran"][:2]:
        parts.append(
            f"{never['agent']} never ran in {never['traces']} trace{'s' if never['traces'] != 1 else ''}"
        )
    if cause["wasted_cost_usd"]:
        parts.append(f"${cause['wasted_cost_usd']:.2f} wasted")
    return "; ".join(parts)


def _key(value: Any) -> str:
    return "" if value is None else str(value)


def rank(causes: Sequence[Cause]) -> list[dict[str, Any]]:
    """Failed traces (newest first) grouped by (agent, kind, name, error type), most traces first:
    each group's share of them, the agents upstream and affected, the agents that never ran (in
    how many traces), the waste, and up to ``EXAMPLES`` trace ids (the newest)."""
    total = len(causes)
    groups: dict[tuple[Any, ...], list[Cause]] = {}
    for c in causes:
        assert c.origin is not None
        o = c.origin
        groups.setdefault((o["agent"], o["kind"], o["name"], o["error_type"]), []).append(c)
    out = []
    for (agent, kind, name, error_type), members in groups.items():
        never: dict[str, int] = {}
        for c in members:
            for target in c.never_ran:
                never[target] = never.get(target, 0) + 1
        costs = [c.wasted["cost_usd"] for c in members if c.wasted["cost_usd"] is not None]
        out.append(
            {
                "agent": agent,
                "kind": kind,
                "name": name,
                "error_type": error_type,
                "traces": len(members),
                "share": len(members) / total,
                "upstream": sorted({a for c in members for a in c.upstream}),
                "affected_agents": sorted({a for c in members for a in c.affected_agents}),
                "never_ran": [
                    {"agent": a, "traces": n}
                    for a, n in sorted(never.items(), key=lambda kv: (-kv[1], kv[0]))
                ],
                "wasted_cost_usd": sum(costs, 0.0) if costs else None,
                "wasted_input_tokens": sum(c.wasted["input_tokens"] for c in members),
                "wasted_output_tokens": sum(c.wasted["output_tokens"] for c in members),
                "wasted_duration_ms": sum(c.wasted["duration_ms"] for c in members),
                "example_trace_ids": [c.trace_id for c in members[:EXAMPLES]],
            }
        )
    out.sort(
        key=lambda g: (-g["traces"], _key(g["agent"]), g["kind"], _key(g["name"]), _key(g["error_type"]))
    )
    return out

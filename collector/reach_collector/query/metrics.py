"""Golden and multi-agent metrics over the stored spans: pure queries, ``now`` always an argument.

Every aggregate runs in DuckDB (``quantile_cont`` = numpy's linear interpolation), filtered first
on ``end_ns`` so the time-ordered span table prunes row groups; only per-group rows reach Python.
A span counts in the window ``(now − window, now]`` by its end time (SPEC §9, §11).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from reach_collector.query.handoff_outcome import outcomes_sql
from reach_collector.query.judged import DEFAULT_JUDGEMENT, Judgement
from reach_collector.query.owners import spans_table, walk_up
from reach_collector.query.pricing import PriceTable
from reach_collector.query.views import iso
from reach_collector.store.base import TraceStore
from reach_collector.store.dialect import dialect_of
from reach_otel import handoff_state as hf
from reach_otel import semconv as sc

__all__ = [
    "BY_VALUES",
    "SERIES_METRICS",
    "agent_tokens",
    "agent_window_stats",
    "agents",
    "golden",
    "timeseries",
    "trace_lookback",
]

_NS: Final = 1_000_000_000
_ERROR: Final = 2  # OTLP STATUS_CODE_ERROR
_QUANTILES: Final = (0.5, 0.95, 0.99)
MAX_POINTS: Final = 11_000  # per series, as Prometheus' query_range

_LLM_IN: Final = "(" + ", ".join("?" * len(sc.LLM_OPERATIONS)) + ")"
_SERVER: Final = 2  # OTLP SPAN_KIND_SERVER
# One count per tool call (§11). When both sides of a remote tool call (MCP's tools/call) are
# traced, the conventions keep two execute_tool spans: the caller's CLIENT span and, under it, the
# server's SERVER span. The call counts once, on the calling side: a SERVER execute_tool span with
# a parent (the caller's span, counted) is left out; one with no parent (an untraced caller) counts.
_SERVED_CALL: Final = f"(operation = '{sc.OP_TOOL}' AND kind = {_SERVER} AND parent_span_id IS NOT NULL)"
# by → (group column, the calls it counts, their parameters). Columns come from this table only.
_GROUPINGS: Final[dict[str, tuple[str, str, tuple[str, ...]]]] = {
    "agent": ("agent", "operation = ?", (sc.OP_AGENT,)),
    "tool": ("tool", f"operation = ? AND NOT {_SERVED_CALL}", (sc.OP_TOOL,)),
    "model": ("model", f"operation IN {_LLM_IN}", tuple(sc.LLM_OPERATIONS)),
    "operation": ("operation", f"operation IS NOT NULL AND NOT {_SERVED_CALL}", ()),
    "service": ("service", "operation = ?", (sc.OP_AGENT,)),
}
BY_VALUES: Final = tuple(_GROUPINGS)
SERIES_METRICS: Final = ("calls", "ok", "errors", "success_rate", "throughput", "p50", "p95", "p99")

# Handoff states (aa-handoff/v1) the rates are defined on (SPEC §11).
_ACCEPTED: Final = (hf.ACCEPTED, hf.RUNNING, hf.COMMITTED, hf.FAILED)
_UNKNOWN: Final = (hf.UNKNOWN, hf.EXPIRED)


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def _window(now_ns: int, window_s: float) -> tuple[int, int]:
    return now_ns - int(window_s * _NS), now_ns


def _grouping(by: str) -> tuple[str, str, tuple[str, ...]]:
    try:
        return _GROUPINGS[by]
    except KeyError:
        raise ValueError(f"by must be one of {', '.join(BY_VALUES)}; got {by[:40]!r}") from None


def _stats(calls: int, errors: int, qs: Sequence[float] | None, minutes: float) -> dict[str, Any]:
    ok = calls - errors
    p50, p95, p99 = qs if qs is not None else (None, None, None)
    return {
        "calls": calls,
        "ok": ok,
        "errors": errors,
        "success_rate": _ratio(ok, calls),
        "throughput_per_min": ok / minutes if minutes else None,
        "p50_ms": p50,
        "p95_ms": p95,
        "p99_ms": p99,
    }


def golden(store: TraceStore, now_ns: int, window_s: float, by: str = "agent") -> dict[str, Any]:
    """Calls, ok, errors, success rate, throughput (ok/min) and p50/p95/p99 per group (§4, §9).

    ``total`` covers every call the groups count; an empty window has zero calls and null rates.
    """
    column, where, params = _grouping(by)
    lo, hi = _window(now_ns, window_s)
    d = dialect_of(store)
    sql, repeat = d.grouped_with_total(
        column,
        f"count(*), {d.count_if(f'status_code = {_ERROR}')}, {d.quantiles('duration_ms', _QUANTILES)}",
        f"spans WHERE end_ns > ? AND end_ns <= ? AND {where}",
    )
    rows = sorted(store.query(sql, [lo, hi, *params] * repeat), key=lambda r: (r[1] == 0, r[0] is None, r[0]))
    minutes = window_s / 60
    groups = []
    total = _stats(0, 0, None, minutes)
    for key, is_total, calls, errors, qs in rows:
        stats = _stats(int(calls), int(errors or 0), qs, minutes)
        if is_total:
            total = stats
        else:
            groups.append({"key": key, **stats})
    return {"window_s": window_s, "until": iso(now_ns), "by": by, "groups": groups, "total": total}


def timeseries(
    store: TraceStore, now_ns: int, since_ns: int, step_s: int, metric: str, by: str = "agent"
) -> dict[str, Any]:
    """One series per group of ``metric`` in steps of ``step_s`` from ``since`` to ``now``.

    Point ``t`` covers the spans ending in ``(t − step, t]``; steps without calls are 0 for
    counts and throughput, null for rates and percentiles.
    """
    if metric not in SERIES_METRICS:
        raise ValueError(f"metric must be one of {', '.join(SERIES_METRICS)}; got {metric[:40]!r}")
    column, where, params = _grouping(by)
    step_ns = step_s * _NS
    if since_ns >= now_ns:
        raise ValueError("since must be before now")
    points = -(-(now_ns - since_ns) // step_ns)
    if points > MAX_POINTS:
        raise ValueError(f"too many points ({points}); use a larger step or a later since")
    d = dialect_of(store)
    rows = store.query(
        f"SELECT {column}, {d.int_div('end_ns - ? - 1', '?')} AS bucket, count(*), "
        f"{d.count_if(f'status_code = {_ERROR}')}, {d.quantiles('duration_ms', _QUANTILES)} "
        f"FROM spans WHERE end_ns > ? AND end_ns <= ? AND {where} GROUP BY {column}, bucket",
        [since_ns, step_ns, since_ns, now_ns, *params],
    )
    rows.sort(key=lambda r: (r[0] is None, r[0], r[1]))
    empty: float | None = 0 if metric in ("calls", "ok", "errors", "throughput") else None
    series: dict[Any, list[Any]] = {}
    for key, bucket, calls, errors, qs in rows:
        values = series.setdefault(key, [empty] * points)
        values[int(bucket)] = _point(metric, int(calls), int(errors), qs, step_s)
    times = [since_ns + (i + 1) * step_ns for i in range(points)]
    return {
        "metric": metric,
        "by": by,
        "step_s": step_s,
        "since": iso(since_ns),
        "until": iso(times[-1]),
        "series": [
            {"key": key, "points": [_pt(t, v) for t, v in zip(times, values, strict=True)]}
            for key, values in series.items()
        ],
    }


def _pt(t_ns: int, value: float | None) -> dict[str, Any]:
    return {"time": iso(t_ns), "t_ns": t_ns, "value": value}


def _point(metric: str, calls: int, errors: int, qs: Sequence[float], step_s: int) -> float | None:
    ok = calls - errors
    values: dict[str, float | None] = {
        "calls": calls,
        "ok": ok,
        "errors": errors,
        "success_rate": _ratio(ok, calls),
        "throughput": ok / (step_s / 60),
        "p50": qs[0],
        "p95": qs[1],
        "p99": qs[2],
    }
    return values[metric]


def agent_window_stats(store: TraceStore, now_ns: int, window_s: float) -> dict[str, dict[str, Any]]:
    """Per agent, its ``invoke_agent`` calls ending in ``(now − window, now]``: ``calls``,
    ``errors``, ``p99_ms`` (failed calls included) and ``service`` (its most frequent service).
    The shape the alert rules read (one query, bounded by the window)."""
    lo, hi = _window(now_ns, window_s)
    d = dialect_of(store)
    window = "FROM spans WHERE end_ns > ? AND end_ns <= ? AND operation = ? AND agent IS NOT NULL"
    rows = store.query(
        f"SELECT agent, count(*), {d.count_if(f'status_code = {_ERROR}')}, {d.quantile('duration_ms', 0.99)} "
        f"{window} GROUP BY agent",
        [lo, hi, sc.OP_AGENT],
    )
    # its most frequent service; a tie goes to the first name
    services: dict[str, tuple[int, str]] = {}
    for agent, service, n in store.query(
        f"SELECT agent, service, count(*) {window} AND service IS NOT NULL GROUP BY agent, service",
        [lo, hi, sc.OP_AGENT],
    ):
        best = services.get(agent)
        if best is None or (-int(n), service) < (-best[0], best[1]):
            services[agent] = (int(n), service)
    return {
        agent: {
            "calls": int(calls),
            "errors": int(errors),
            "p99_ms": p99,
            "service": services[agent][1] if agent in services else None,
        }
        for agent, calls, errors, p99 in sorted(rows, key=lambda r: r[0])
    }


def agents(
    store: TraceStore,
    now_ns: int,
    window_s: float,
    prices: Mapping[str, Mapping[str, float]],
    judgement: Judgement = DEFAULT_JUDGEMENT,
) -> dict[str, Any]:
    """Handoff rates, hop distribution, loop rate, and per-agent tokens, share and cost (§4, §11);
    handoffs resolved as ``judgement`` judges their traces' evaluations (§18)."""
    lo, hi = _window(now_ns, window_s)
    since = trace_lookback(store, lo, hi)
    return {
        "window_s": window_s,
        "until": iso(now_ns),
        "handoffs": _handoffs(store, lo, hi, since, judgement),
        **_hops_and_loops(store, lo, hi, since),
        **agent_tokens(store, lo, hi, since, prices),
    }


def trace_lookback(store: TraceStore, lo: int, hi: int) -> int:
    """The earliest start of any trace with an agent, handoff or LLM span ending in the window:
    every related span (a handoff's target, an ancestor, an earlier hop) ends after it. Read from
    the trace lookup tables, so the span scans below stay bounded by time."""
    ops = (sc.OP_AGENT, sc.OP_HANDOFF, *sc.LLM_OPERATIONS)
    rows = store.query(
        # A trace with a span ending after lo has last_end_ns > lo: a filter the lookup table
        # answers from its own order, so this read follows the window, not the store's size.
        f"SELECT min(first_start_ns) FROM {store.trace_bounds} WHERE last_end_ns > ? AND trace_id IN ("
        f" SELECT trace_id FROM spans WHERE end_ns > ? AND end_ns <= ?"
        f" AND operation IN ({', '.join('?' * len(ops))}))",
        [lo, lo, hi, *ops],
    )
    first = rows[0][0] if rows else None
    return min(lo, int(first)) if first is not None else lo


def _handoffs(store: TraceStore, lo: int, hi: int, since: int, judgement: Judgement) -> dict[str, Any]:
    """Each handoff's one outcome (SPEC §11, ``handoff_outcome``): its recorded status, or, with
    none recorded, the target's next agent span in the trace (not ERROR → committed, ERROR →
    failed, none → unknown), marked inferred; ``resolved``: those whose trace has an evaluation
    ``judgement`` calls good (SPEC §18)."""
    d = dialect_of(store)
    outcomes, params = outcomes_sql(lo, hi, since, ("handoff_mode", "trace_id"), dialect=d)
    good, good_params = judgement.good_traces(lo)
    rows = store.query(
        f"SELECT status, inferred, count(*), {d.count_if('handoff_mode = ?')},"
        f" {d.count_if(f'trace_id IN ({good})')} FROM ({outcomes}) AS e GROUP BY status, inferred",
        ["escalate", *good_params, *params],
    )
    rows.sort(key=lambda r: (r[0], r[1]))
    counted = [
        {"status": status, "inferred": bool(inferred), "handoffs": int(n)}
        for status, inferred, n, _, _ in rows
    ]
    by_status: dict[str, int] = {}
    for o in counted:
        by_status[o["status"]] = by_status.get(o["status"], 0) + o["handoffs"]
    total = sum(by_status.values())
    committed = by_status.get(hf.COMMITTED, 0)
    accepted = sum(by_status.get(s, 0) for s in _ACCEPTED)
    unknown = sum(by_status.get(s, 0) for s in _UNKNOWN)
    escalated = sum(int(e) for *_, e, _ in rows)
    return {
        "total": total,
        "committed": committed,
        "resolved": sum(int(r) for *_, r in rows),
        "accepted": accepted,
        "inferred": sum(o["handoffs"] for o in counted if o["inferred"]),
        "efficiency": _ratio(committed, total),
        "acceptance_rate": _ratio(accepted, total),
        "commit_rate": _ratio(committed, accepted),
        "unknown_rate": _ratio(unknown, total),
        "escalation_rate": _ratio(escalated, total),
        "outcomes": counted,
    }


def _hops_and_loops(store: TraceStore, lo: int, hi: int, since: int) -> dict[str, Any]:
    """Per trace with an agent span ending in the window: its handoff spans (hops) and whether
    any span in it detected a loop."""
    d = dialect_of(store)
    row = store.query(
        f"SELECT count(*), {d.quantiles('hops', _QUANTILES)}, {d.count_if('hops <= 2')},"
        f" {d.count_if('looped = 1')} FROM ("
        f"  SELECT trace_id, {d.count_if('operation = ?')} AS hops, max(loop_detected) AS looped FROM spans"
        "  WHERE end_ns >= ? AND end_ns <= ? AND trace_id IN ("
        "   SELECT trace_id FROM spans WHERE end_ns > ? AND end_ns <= ? AND operation = ?)"
        "  GROUP BY trace_id)",
        [sc.OP_HANDOFF, since, hi, lo, hi, sc.OP_AGENT],
    )[0]
    traces, qs, within_2, looped = int(row[0]), row[1], int(row[2] or 0), int(row[3] or 0)
    p50, p95, p99 = qs if qs is not None else (None, None, None)
    return {
        "hops": {
            "traces": traces,
            "p50": p50,
            "p95": p95,
            "p99": p99,
            "share_le_2": _ratio(within_2, traces),
        },
        "loops": {"traces_with_loop": looped, "rate": _ratio(looped, traces)},
    }


def agent_tokens(
    store: TraceStore,
    lo: int,
    hi: int,
    since: int | None,
    prices: Mapping[str, Mapping[str, float]],
    service: str | None = None,
) -> dict[str, Any]:
    """LLM tokens per agent and model. An LLM span belongs to the agent in ``reach.agent.name``
    (the ``agent`` column), else to its nearest ``invoke_agent`` ancestor, searched from ``since``
    (``trace_lookback``; None: looked up only when a span needs the walk). ``service`` keeps only
    the LLM and agent spans of that ``service.name``."""
    llm = ", ".join("?" * len(sc.LLM_OPERATIONS))
    only, only_params = (" AND service = ?", [service]) if service is not None else ("", [])
    window = f" WHERE end_ns > ? AND end_ns <= ? AND operation IN ({llm}){only}"
    window_params = [lo, hi, *sc.LLM_OPERATIONS, *only_params]
    sums: dict[tuple[Any, Any], list[int]] = {}

    def add(who: Any, model: Any, tin: Any, tout: Any) -> None:
        acc = sums.setdefault((who, model), [0, 0])
        acc[0] += int(tin or 0)
        acc[1] += int(tout or 0)

    tokens = "sum(coalesce(input_tokens, 0)), sum(coalesce(output_tokens, 0))"
    for who, model, tin, tout in store.query(
        f"SELECT agent, model, {tokens} FROM spans{window} AND agent IS NOT NULL GROUP BY agent, model",
        window_params,
    ):
        add(who, model, tin, tout)
    bare = f"end_ns > ? AND end_ns <= ? AND operation IN ({llm}) AND agent IS NULL{only}"
    if store.query(f"SELECT count(*) FROM spans WHERE {bare}", window_params)[0][0]:
        # LLM spans that name no agent: their owners, by a walk up the spans of their traces
        rows = store.query(
            "SELECT trace_id, span_id, parent_span_id, operation, agent, model, input_tokens, output_tokens,"
            f" ({bare}) AS start FROM spans WHERE end_ns >= ? AND trace_id IN ("
            f"  SELECT trace_id FROM spans WHERE {bare})",
            [*window_params, since if since is not None else trace_lookback(store, lo, hi), *window_params],
        )
        starts = [r for r in rows if r[8]]
        owners = walk_up(spans_table(rows), [(r[0], r[1]) for r in starts])
        for r, (owner, _) in zip(starts, owners, strict=True):
            add(owner, r[5], r[6], r[7])
    # every agent with a run in the window is listed, with or without LLM calls
    for (who,) in store.query(
        f"SELECT DISTINCT agent FROM spans WHERE end_ns > ? AND end_ns <= ? AND operation = ?"
        f" AND agent IS NOT NULL{only}",
        [lo, hi, sc.OP_AGENT, *only_params],
    ):
        sums.setdefault((who, None), [0, 0])
    rows = [(who, model, tin, tout) for (who, model), (tin, tout) in sums.items()]
    per: dict[str, dict[str, Any]] = {}
    unattributed = {"input_tokens": 0, "output_tokens": 0}
    table = PriceTable(prices)
    for who, model, tin, tout in rows:
        tin, tout = int(tin), int(tout)
        if who is None:
            unattributed["input_tokens"] += tin
            unattributed["output_tokens"] += tout
            continue
        entry = per.setdefault(who, {"agent": who, "input_tokens": 0, "output_tokens": 0, "models": []})
        entry["input_tokens"] += tin
        entry["output_tokens"] += tout
        if tin or tout:
            cost = table.usd(model, tin, tout)
            entry["models"].append(
                {"model": model, "input_tokens": tin, "output_tokens": tout, "cost_usd": cost}
            )
    total = sum(e["input_tokens"] + e["output_tokens"] for e in per.values())
    out = []
    for entry in sorted(per.values(), key=lambda e: (-(e["input_tokens"] + e["output_tokens"]), e["agent"])):
        costs = [m["cost_usd"] for m in entry["models"]]
        entry["token_share"] = _ratio(entry["input_tokens"] + entry["output_tokens"], total)
        # An unknown model's cost is unknown, so the agent's total is too (null, never 0).
        entry["cost_usd"] = None if None in costs else sum(costs, 0.0)
        entry["unpriced_models"] = sorted(str(m["model"]) for m in entry["models"] if m["cost_usd"] is None)
        entry["models"].sort(key=lambda m: str(m["model"]))
        out.append(entry)
    return {"agents": out, "unattributed_tokens": unattributed}

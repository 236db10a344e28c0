"""The agent topology over a window (SPEC §15): agents as nodes (calls, errors, p95, tokens, cost)
and handoffs as edges ``source → target`` (outcomes by the §11 rule, p95 of the handoff spans,
loops). Pure queries, ``now`` an argument, bounded by the window like the other metrics.

A span counts in the window ``(now − window, now]`` by its end time. Outcomes come from
``handoff_outcome.outcomes_sql`` (the one SQL form of the rule), tokens and cost from
``metrics.agent_tokens`` (an LLM span belongs to its agent attribute, else its nearest agent
ancestor), so the topology never disagrees with ``/api/metrics/agents``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from reach_collector.query.handoff_outcome import ERROR_CODE, outcomes_sql
from reach_collector.query.judged import DEFAULT_JUDGEMENT, Judgement
from reach_collector.query.metrics import agent_tokens
from reach_collector.query.pricing import PriceTable
from reach_collector.query.views import iso
from reach_collector.store.base import TraceStore
from reach_collector.store.dialect import dialect_of
from reach_otel import handoff_state as hf
from reach_otel import semconv as sc

__all__ = [
    "EDGE_COUNTS",
    "MINUTE_NS",
    "PER",
    "TAKEN",
    "edge_counts",
    "edge_handoffs",
    "edge_window_stats",
    "edges",
    "edges_seen",
    "first_handoff_start",
    "priced",
    "spend",
    "spend_rows",
    "topology",
]

_NS: Final = 1_000_000_000
# Edge fields counted from the outcome: each is the handoffs whose status is one of these.
EDGE_COUNTS: Final[Mapping[str, tuple[str, ...]]] = {
    "committed": (hf.COMMITTED,),
    "rejected": (hf.REJECTED,),
    "failed": (hf.FAILED,),
    "unknown": (hf.UNKNOWN, hf.EXPIRED),  # no outcome ever came (§11's unknown_rate)
}
# Handoffs the target took on: the commit rate's denominator (§11).
TAKEN: Final = (hf.ACCEPTED, hf.RUNNING, hf.COMMITTED, hf.FAILED)
_LLM: Final = tuple(sc.LLM_OPERATIONS)
_MODES: Final = (*hf.MODES, sc.TRANSFER_PASS_CONTROL, sc.TRANSFER_RETURN_TO_CALLER)
# What a budget is kept per: the key of an LLM span (user.id is no promoted column: read from the
# attributes JSON, only of the LLM spans the window and operation filters already kept).
PER: Final[Mapping[str, str]] = {
    "agent": "agent",
    "conversation": "conversation_id",
    "user": "",  # the dialect's attribute value of user.id (see _per)
}


def _per(store: TraceStore, per: str) -> tuple[str, list[Any]]:
    if per == "user":
        return dialect_of(store).attr("attributes", sc.USER_ID)
    return PER[per], []


def _service(service: str | None) -> tuple[str, list[Any]]:
    return (" AND service = ?", [service]) if service is not None else ("", [])


def edges(
    store: TraceStore,
    lo: int,
    hi: int,
    since: int,
    service: str | None = None,
    judgement: Judgement = DEFAULT_JUDGEMENT,
) -> list[dict[str, Any]]:
    """One entry per ``(source, target)`` of the handoff spans ending in ``(lo, hi]``; ``resolved``:
    its handoffs whose trace has an evaluation ``judgement`` calls good (SPEC §18)."""
    where, where_params = _service(service)
    cte, params = outcomes_sql(
        lo,
        hi,
        since,
        ("handoff_source", "handoff_target", "handoff_mode", "duration_ms", "loop_detected", "trace_id"),
        where,
        where_params,
        dialect=dialect_of(store),
    )
    # One count per known status and mode (a MAP aggregate such as histogram() costs ten times
    # more); what is none of them is ``other``.
    d = dialect_of(store)
    by_status = ", ".join(d.count_if("status = ?") for _ in hf.STATES)
    by_mode = ", ".join(d.count_if("handoff_mode = ?") for _ in _MODES)
    good, good_params = judgement.good_traces(lo)
    rows = store.query(
        f"SELECT handoff_source, handoff_target, count(*), count(handoff_mode), {by_status}, {by_mode},"
        f" {d.count_if('inferred = 1')}, {d.quantile('duration_ms', 0.95)},"
        f" {d.count_if('loop_detected = 1')}, {d.count_if(f'trace_id IN ({good})')}"
        f" FROM ({cte}) AS e GROUP BY handoff_source, handoff_target",
        [*hf.STATES, *_MODES, *good_params, *params],
    )
    rows.sort(key=lambda r: (-int(r[2]), r[0] is None, r[0] or "", r[1] is None, r[1] or ""))
    out = []
    k, m = len(hf.STATES), len(_MODES)
    for source, target, n, with_mode, *counts in rows:
        statuses = _named(hf.STATES, counts[:k], int(n))
        modes = _named(_MODES, counts[k : k + m], int(with_mode))
        inferred, p95, loops, resolved = counts[k + m :]
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
            resolved=int(resolved),
            inferred=int(inferred),
            p95_ms=p95,
            loops=int(loops),
            statuses=dict(sorted(statuses.items())),
            modes=dict(sorted(modes.items())),
        )
        out.append(edge)
    return out


def _named(names: tuple[str, ...], counts: list[Any], total: int) -> dict[str, int]:
    out = {name: int(c) for name, c in zip(names, counts, strict=True) if c}
    if total > sum(out.values()):
        out["other"] = total - sum(out.values())
    return out


def _agent_calls(store: TraceStore, lo: int, hi: int, service: str | None) -> dict[str, dict[str, Any]]:
    where, where_params = _service(service)
    d = dialect_of(store)
    rows = store.query(
        f"SELECT agent, count(*), {d.count_if(f'status_code = {ERROR_CODE}')},"
        f" {d.quantile('duration_ms', 0.95)}"
        f" FROM spans WHERE end_ns > ? AND end_ns <= ? AND operation = ? AND agent IS NOT NULL{where}"
        " GROUP BY agent",
        [lo, hi, sc.OP_AGENT, *where_params],
    )
    return {agent: {"calls": int(n), "errors": int(e), "p95_ms": p95} for agent, n, e, p95 in rows}


def topology(
    store: TraceStore,
    now_ns: int,
    window_s: float,
    prices: Mapping[str, Mapping[str, float]] | None = None,
    service: str | None = None,
    judgement: Judgement = DEFAULT_JUDGEMENT,
) -> dict[str, Any]:
    """The ``GET /api/topology`` body: nodes by calls, edges by handoffs (both most first).

    Every agent that made a call, spent tokens or sits at either end of a handoff is a node;
    ``cost_usd`` is null when one of its models is not in the price table (unknown, never 0)."""
    lo, hi = now_ns - int(window_s * _NS), now_ns
    calls = _agent_calls(store, lo, hi, service)
    found = edges(store, lo, hi, first_handoff_start(store, lo, hi), service, judgement)
    tokens = {a["agent"]: a for a in agent_tokens(store, lo, hi, None, prices or {}, service)["agents"]}
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


def edge_window_stats(
    store: TraceStore, now_ns: int, windows_s: tuple[float, ...]
) -> dict[float, dict[tuple[str, str], tuple[int, int, int]]]:
    """Per trailing window, per ``(source, target)``: (handoffs, taken on, committed) of the handoff
    spans ending in it, outcomes by the §11 rule — every window from one scan of the longest."""
    windows = sorted(set(windows_s))
    if not windows:
        return {}
    starts = [now_ns - int(w * _NS) for w in windows]
    rows = edge_counts(store, starts[-1], now_ns, cuts=starts)
    out: dict[float, dict[tuple[str, str], tuple[int, int, int]]] = {w: {} for w in windows}
    for source, target, _minute, _counts, after in rows:
        for w, (n, took, committed) in zip(windows, after, strict=True):
            if n:
                out[w][(source, target)] = (n, took, committed)
    return out


EdgeRow = tuple[str, str, int | None, tuple[int, int, int], tuple[tuple[int, int, int], ...]]


def edge_counts(
    store: TraceStore,
    lo: int,
    hi: int,
    *,
    until: int | None = None,
    by_minute: bool = False,
    cuts: tuple[int, ...] | list[int] = (),
) -> list[EdgeRow]:
    """(handoffs, taken on, committed) of the handoff spans ending in ``(lo, hi]`` per
    ``(source, target)`` — and per minute with ``by_minute`` (the minute ``(m, m + 60 s]`` the span
    ended in, as its start ``m`` in unix ns; else None) — outcomes by the §11 rule with the target
    spans ending by ``until`` (None: ``hi``). Each row also has, per cut in ``cuts``, the same
    three counts of its handoffs ending after the cut. Rows: (source, target, minute, counts, per cut)."""
    since = first_handoff_start(store, lo, hi)
    cte, params = outcomes_sql(
        lo, hi, since, ("handoff_source", "handoff_target", "end_ns"), until=until, dialect=dialect_of(store)
    )
    d = dialect_of(store)
    taken = f"status IN ({', '.join('?' * len(TAKEN))})"
    picks = [f"count(*), {d.count_if(taken)}, {d.count_if('status = ?')}"]
    pick_params: list[Any] = [*TAKEN, hf.COMMITTED]
    for cut in cuts:
        after = "end_ns > ?"
        picks.append(
            f"{d.count_if(after)}, {d.count_if(f'{after} AND {taken}')},"
            f" {d.count_if(f'{after} AND status = ?')}"
        )
        pick_params += [cut, cut, *TAKEN, cut, hf.COMMITTED]
    minute, group = (f"{_minute_sql('end_ns')} AS m", ", m") if by_minute else ("NULL", "")
    rows = store.query(
        f"SELECT handoff_source, handoff_target, {minute}, {', '.join(picks)} FROM ({cte}) AS e"
        " WHERE handoff_source IS NOT NULL AND handoff_target IS NOT NULL"
        f" GROUP BY handoff_source, handoff_target{group}",
        [*pick_params, *params],
    )
    if not cuts:  # the common shape, built without a loop per cut (a long fill has many rows)
        return [
            (s, t, None if at is None else int(at), (int(n), int(took), int(ok)), ())
            for s, t, at, n, took, ok in rows
        ]
    out: list[EdgeRow] = []
    for source, target, at, *counts in rows:
        threes = [(int(counts[i]), int(counts[i + 1]), int(counts[i + 2])) for i in range(0, len(counts), 3)]
        out.append((source, target, None if at is None else int(at), threes[0], tuple(threes[1:])))
    return out


def edge_handoffs(
    store: TraceStore, lo: int, hi: int, *, until: int | None = None
) -> list[tuple[str, str, int, int, int]]:
    """One row per handoff span ending in ``(lo, hi]`` with both ends named: (source, target, end
    unix ns, 1 if the target took it on else 0, 1 if committed else 0), outcomes by the §11 rule
    with the target spans ending by ``until`` (None: ``hi``)."""
    since = first_handoff_start(store, lo, hi)
    cte, params = outcomes_sql(
        lo, hi, since, ("handoff_source", "handoff_target", "end_ns"), until=until, dialect=dialect_of(store)
    )
    taken = ", ".join("?" * len(TAKEN))
    rows: list[Any] = store.query(
        f"SELECT handoff_source, handoff_target, end_ns,"
        f" CASE WHEN status IN ({taken}) THEN 1 ELSE 0 END, CASE WHEN status = ? THEN 1 ELSE 0 END"
        f" FROM ({cte}) AS e WHERE handoff_source IS NOT NULL AND handoff_target IS NOT NULL",
        [*TAKEN, hf.COMMITTED, *params],
    )
    return rows  # integers already: BIGINT and INTEGER columns


def first_handoff_start(store: TraceStore, lo: int, hi: int) -> int:
    """The earliest start of a handoff span ending in ``(lo, hi]`` (``hi`` when there is none): the
    bound of the search for targets' next agent spans, given to the query as a number so the
    store prunes by it (a subquery there would not; trace ids are random, so nothing else does)."""
    rows = store.query(
        "SELECT min(start_ns) FROM spans WHERE end_ns > ? AND end_ns <= ? AND operation = ?",
        [lo, hi, sc.OP_HANDOFF],
    )
    return int(rows[0][0]) if rows and rows[0][0] is not None else hi


MINUTE_NS: Final = 60 * _NS


def _minute_sql(column: str) -> str:
    """The start of the minute ``(m, m + 60 s]`` that ``column`` (unix ns) falls in, in integer
    arithmetic every store has (the divisor is a constant, never input)."""
    return f"(({column} - 1) - ({column} - 1) % {MINUTE_NS})"


SpendRow = tuple[str, str | None, int | None, int, int, int]


def spend_rows(store: TraceStore, lo: int, hi: int, per: str, *, by_minute: bool = False) -> list[SpendRow]:
    """LLM tokens of the spans ending in ``(lo, hi]`` per key of ``per`` (agent, user or
    conversation) and model — and per minute with ``by_minute`` (as in ``edge_counts``): rows of
    (key, model, minute or None, input tokens, output tokens, the end of the first span, unix ns)."""
    key, key_params = _per(store, per)
    llm = ", ".join("?" * len(_LLM))
    minute, group = (f"{_minute_sql('end_ns')} AS m", ", m") if by_minute else ("NULL", "")
    rows = store.query(
        f"SELECT k, model, {minute}, sum(coalesce(input_tokens, 0)), sum(coalesce(output_tokens, 0)),"
        f" min(end_ns) FROM (SELECT {key} AS k, model, end_ns, input_tokens, output_tokens FROM spans"
        f" WHERE end_ns > ? AND end_ns <= ? AND operation IN ({llm})) WHERE k IS NOT NULL"
        f" GROUP BY k, model{group}",
        [*key_params, lo, hi, *_LLM],
    )
    return [
        (str(k), model, None if at is None else int(at), int(tin), int(tout), int(first))
        for k, model, at, tin, tout, first in rows
    ]


def spend(
    store: TraceStore, lo: int, hi: int, per: str, prices: Mapping[str, Mapping[str, float]]
) -> dict[str, tuple[float | None, int, int]]:
    """LLM spend of the spans ending in ``(lo, hi]`` per ``per`` (agent, user or conversation):
    key → (USD at the price table, or None when a model with tokens is not in it; input + output
    tokens; the end of its first LLM span in the window, unix ns)."""
    return priced(
        ((k, model, tin, tout, first) for k, model, _at, tin, tout, first in spend_rows(store, lo, hi, per)),
        prices,
    )


def priced(
    rows: Iterable[tuple[str, str | None, int, int, int]], prices: Mapping[str, Mapping[str, float]]
) -> dict[str, tuple[float | None, int, int]]:
    """Per key: (USD, tokens, first end) from its (key, model, input, output, first end) totals —
    the USD None when a model with tokens is not in the price table (unknown, never 0)."""
    out: dict[str, tuple[float | None, int, int]] = {}
    table = PriceTable(prices)
    for who, model, tin, tout, first in rows:
        usd = table.usd(model, tin, tout)
        if usd is None and not (tin or tout):
            usd = 0.0
        cost, tokens, since = out.get(who, (0.0, 0, first))
        total = None if cost is None or usd is None else cost + usd
        out[who] = (total, tokens + tin + tout, min(since, first))
    return out


def edges_seen(
    store: TraceStore, lo: int, hi: int, *, first: bool = False
) -> dict[tuple[str, str], tuple[int, str | None, str | None] | None]:
    """The ``(source, target)`` pairs of the handoff spans ending in ``(lo, hi]``; with ``first``,
    each with its first handoff span's end (unix ns), ``service.version`` (a resource attribute)
    and service — only read for that one span per edge."""
    where = (
        "end_ns > ? AND end_ns <= ? AND operation = ?"
        " AND handoff_source IS NOT NULL AND handoff_target IS NOT NULL"
    )
    if not first:
        rows = store.query(
            f"SELECT DISTINCT handoff_source, handoff_target FROM spans WHERE {where}",
            [lo, hi, sc.OP_HANDOFF],
        )
        return {(s, t): None for s, t in rows}
    version, version_params = dialect_of(store).attr("resource", sc.SERVICE_VERSION)
    rows = store.query(
        "SELECT f.handoff_source, f.handoff_target, f.at, s.version, s.service FROM ("
        "  SELECT handoff_source, handoff_target, argMin(span_id, end_ns) AS first_span, min(end_ns) AS at"
        f"  FROM spans WHERE {where} GROUP BY handoff_source, handoff_target) AS f"
        f" JOIN (SELECT span_id AS s_span, end_ns AS s_end, {version} AS version, service FROM spans"
        f"  WHERE {where}) AS s ON s.s_span = f.first_span AND s.s_end = f.at",
        [lo, hi, sc.OP_HANDOFF, *version_params, lo, hi, sc.OP_HANDOFF],
    )
    return {(s, t): (int(at), version, service) for s, t, at, version, service in rows}

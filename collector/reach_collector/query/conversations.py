"""Conversations (SPEC §18): the traces that share a ``gen_ai.conversation.id`` (the session the
library stamps on every span of a request), summed over the spans that ended in a window — turns
(traces), agents, handoffs, LLM tokens and their cost, errors, evaluations, first and last time —
and one conversation's traces in start order. Written once for both stores (``store.dialect``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from reach_collector.query.pricing import PriceTable
from reach_collector.query.views import iso, summary_json
from reach_collector.store.base import TraceFilter, TraceStore
from reach_collector.store.dialect import dialect_of
from reach_otel import semconv as sc

__all__ = ["DEFAULT_LIMIT", "MAX_ID", "MAX_LIMIT", "MAX_TRACES", "conversation", "conversations"]

DEFAULT_LIMIT: Final = 50
MAX_LIMIT: Final = 1000
MAX_TRACES: Final = 1000  # traces one conversation answers with, the earliest first
MAX_ID: Final = 256  # characters of a conversation id
_ERROR: Final = 2
_LLM: Final = tuple(sc.LLM_OPERATIONS)
_WINDOW: Final = "FROM spans WHERE end_ns > ? AND end_ns <= ? AND conversation_id IS NOT NULL"


def conversations(
    store: TraceStore,
    now_ns: int,
    window_s: float,
    prices: Mapping[str, Mapping[str, float]] | None = None,
    limit: int = DEFAULT_LIMIT,
) -> dict[str, Any]:
    """``GET /api/conversations``: each conversation with a span ending in ``(now − window, now]``,
    its totals over those spans, the most recently active first (at most ``limit``)."""
    d = dialect_of(store)
    lo = now_ns - int(window_s * 1_000_000_000)
    window = [lo, now_ns]
    llm = f"operation IN ({', '.join('?' * len(_LLM))})"
    rows = store.query(
        "SELECT conversation_id, count(DISTINCT trace_id), "
        f"{d.count_if(f'operation = {chr(39)}{sc.OP_HANDOFF}{chr(39)}')}, "
        f"{d.count_if(f'status_code = {_ERROR}')}, min(start_ns), max(end_ns) "
        f"{_WINDOW} GROUP BY conversation_id ORDER BY max(end_ns) DESC, conversation_id LIMIT ?",
        [*window, limit],
    )
    if not rows:
        return {"window_s": window_s, "until": iso(now_ns), "conversations": []}
    ids = [r[0] for r in rows]
    marks = ", ".join("?" * len(ids))
    agents: dict[str, set[str]] = {}
    for cid, agent in store.query(
        f"SELECT conversation_id, agent {_WINDOW} AND conversation_id IN ({marks}) "
        "AND operation = ? AND agent IS NOT NULL GROUP BY conversation_id, agent",
        [*window, *ids, sc.OP_AGENT],
    ):
        agents.setdefault(cid, set()).add(agent)
    priced = PriceTable(prices)
    tokens: dict[str, list[Any]] = {}  # conversation → [input, output, cost or None]
    for cid, model, tin, tout in store.query(
        f"SELECT conversation_id, model, sum(coalesce(input_tokens, 0)), sum(coalesce(output_tokens, 0)) "
        f"{_WINDOW} AND conversation_id IN ({marks}) AND {llm} GROUP BY conversation_id, model",
        [*window, *ids, *_LLM],
    ):
        entry = tokens.setdefault(cid, [0, 0, None])
        entry[0] += int(tin)
        entry[1] += int(tout)
        cost = priced.usd(model, int(tin), int(tout))
        if cost is not None:
            entry[2] = (entry[2] or 0.0) + cost
    # evaluations of the conversations' traces (joined by trace id; in Python, as 18.16's joins differ)
    members = store.query(
        f"SELECT conversation_id, trace_id {_WINDOW} AND conversation_id IN ({marks}) "
        "GROUP BY conversation_id, trace_id",
        [*window, *ids],
    )
    per_trace = dict(
        store.query(
            "SELECT trace_id, count(*) FROM evaluations WHERE trace_id IN "
            f"(SELECT trace_id {_WINDOW} AND conversation_id IN ({marks})) GROUP BY trace_id",
            [*window, *ids],
        )
    )
    judged: dict[str, int] = {}
    for cid, tid in members:
        judged[cid] = judged.get(cid, 0) + int(per_trace.get(tid, 0))
    out = []
    for cid, traces, handoffs, errors, first, last in rows:
        tin, tout, cost = tokens.get(cid, [0, 0, None])
        out.append(
            {
                "conversation_id": cid,
                "traces": int(traces),
                "agents": sorted(agents.get(cid, ())),
                "handoffs": int(handoffs),
                "input_tokens": tin,
                "output_tokens": tout,
                "cost_usd": cost,
                "errors": int(errors),
                "evaluations": int(judged.get(cid, 0)),
                "first": iso(int(first)),
                "last": iso(int(last)),
            }
        )
    return {"window_s": window_s, "until": iso(now_ns), "conversations": out}


def conversation(
    store: TraceStore, conversation_id: str, since_ns: int | None = None
) -> dict[str, Any] | None:
    """``GET /api/conversations/{id}``: its traces (a span of each carries the id) in start order,
    each with its summary (the trace search's), at most ``MAX_TRACES``; None when there is none."""
    found = store.search(
        TraceFilter(
            attributes=((sc.GEN_AI_CONVERSATION_ID, conversation_id),), since_ns=since_ns, limit=MAX_TRACES
        )
    )
    if not found:
        return None
    traces = sorted(
        (summary_json(row) for row in found), key=lambda t: (t["start_time_unix_nano"], t["trace_id"])
    )
    return {"conversation_id": conversation_id, "trace_count": len(traces), "traces": traces}

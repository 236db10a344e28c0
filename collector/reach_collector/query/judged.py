"""What a quality SLO reads (SPEC §18, rule type ``quality``): the evaluations of one name made in
a window, each with the agent that owns the evaluated span (``evaluations.owners_of``: the span's
agent, else its nearest agent ancestor's) — its score and label, for the rule to judge."""

from __future__ import annotations

from typing import Final

from reach_collector.query.evaluations import LOOKBACK_NS, owners_of
from reach_collector.store.base import TraceStore

__all__ = ["MAX_JUDGED", "Verdict", "judged_by_agent"]

MAX_JUDGED: Final = 200_000  # evaluations one window reads at most (the newest)

Verdict = tuple[float | None, str | None]  # (score, label)


def judged_by_agent(store: TraceStore, now_ns: int, window_s: float, name: str) -> dict[str, list[Verdict]]:
    """Per agent, the (score, label) of each evaluation ``name`` made in ``(now − window, now]``;
    an evaluation whose span is not found belongs to no agent and is left out."""
    lo = now_ns - int(window_s * 1_000_000_000)
    window = "FROM evaluations WHERE name = ? AND time_ns > ? AND time_ns <= ?"
    newest = f"ORDER BY time_ns DESC LIMIT {MAX_JUDGED}"
    found = store.query(
        f"SELECT trace_id, span_id, response_id, score, label {window} {newest}", [name, lo, now_ns]
    )
    traces = (f"SELECT trace_id {window} AND trace_id IS NOT NULL", [name, lo, now_ns])
    landed = owners_of(store, [(t, s, r) for t, s, r, *_ in found], lo - LOOKBACK_NS, traces)
    out: dict[str, list[Verdict]] = {}
    for where, (*_, score, label) in zip(landed, found, strict=True):
        if where.agent is not None:
            out.setdefault(where.agent, []).append((score, label))
    return out

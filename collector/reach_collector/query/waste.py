"""What a failed trace wasted (SPEC §17, ``query.cause`` picks the spans): tokens, their cost and
the time they took, overlaps counted once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from reach_collector.query.pricing import PriceTable
from reach_otel import semconv as sc

__all__ = ["union_ns", "waste"]

_LLM: Final = frozenset(sc.LLM_OPERATIONS)


def waste(
    rows: Sequence[Mapping[str, Any]], prices: PriceTable, more: Sequence[tuple[int, int]] = ()
) -> dict[str, Any]:
    """The tokens of the LLM spans among ``rows`` and their cost (the models the table does not price
    listed apart; None when tokens were spent and none was priced), and the time the rows' spans
    and the ``more`` intervals cover together, counted once where they overlap."""
    tin = tout = 0
    cost = 0.0
    priced = False
    unpriced: set[str] = set()
    for r in rows:
        if r["operation"] not in _LLM:
            continue
        i, o = int(r["input_tokens"] or 0), int(r["output_tokens"] or 0)
        if not (i or o):
            continue
        tin, tout = tin + i, tout + o
        usd = prices.usd(r["model"], i, o)
        if usd is None:
            unpriced.add(str(r["model"]))
        else:
            cost, priced = cost + usd, True
    return {
        "input_tokens": tin,
        "output_tokens": tout,
        "cost_usd": cost if priced or not unpriced else None,
        "unpriced_models": sorted(unpriced),
        "duration_ms": union_ns([*((r["start_ns"], r["end_ns"]) for r in rows), *more]) / 1e6,
        "spans": len(rows),
    }


def union_ns(intervals: list[tuple[int, int]]) -> int:
    """Length of the union of ``[start, end]`` intervals."""
    total, reach = 0, None
    for start, end in sorted(intervals):
        if reach is None or start > reach:
            total += max(0, end - start)
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total

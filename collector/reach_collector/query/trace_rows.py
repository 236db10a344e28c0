"""Stored spans of a set of traces, read in bounded pieces: what /metrics' pending-span lookups
(a handoff's target run, an LLM call's owning agent) read when the span they wait for was stored
in an earlier request."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from reach_collector.store.base import TraceStore

__all__ = ["TRACES_PER_QUERY", "rows_of_traces"]

TRACES_PER_QUERY: Final = 2000  # keeps a lookup's SQL under the servers' query size limits


def rows_of_traces(
    store: TraceStore,
    columns: Sequence[str],
    traces: Sequence[str],
    *,
    ended_since_ns: int,
    operation: str | None = None,
) -> list[tuple[Any, ...]]:
    """``columns`` of the spans of ``traces`` that ended at or after ``ended_since_ns`` (so the
    store skips older rows), only ``operation``'s when given; ``columns`` come from the caller's
    constants, never from input."""
    where = "end_ns >= ?" + (" AND operation = ?" if operation is not None else "")
    head = [ended_since_ns] + ([operation] if operation is not None else [])
    rows: list[tuple[Any, ...]] = []
    for i in range(0, len(traces), TRACES_PER_QUERY):
        chunk = list(traces[i : i + TRACES_PER_QUERY])
        among = ", ".join("?" * len(chunk))
        rows += store.query(
            f"SELECT {', '.join(columns)} FROM spans WHERE {where} AND trace_id IN ({among})", [*head, *chunk]
        )
    return rows

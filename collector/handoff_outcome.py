"""The one outcome of a handoff (SPEC §11), shared by the trace view, ``/api/metrics/agents`` and
``/metrics``: the rule itself, its SQL form, and the tracker that counts handoffs for Prometheus.

A recorded ``reach.handoff.status`` other than ``unknown``/``created`` stands, whoever produced the
span. Only a handoff with no recorded outcome (no status, or ``unknown``/``created`` with no
``reach.handoff.transitions``) takes the target's next agent span in the trace — the earliest
``invoke_agent`` span of the target starting at or after the handoff: not ERROR → committed,
ERROR → failed, none → unknown — and is marked *inferred*.

``outcomes_sql`` is the rule over the store: every handoff span ending in a window with its one
outcome, the query ``/api/metrics/agents`` and ``/api/topology`` both aggregate.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import Any, Final

from reach_otel import handoff_state as hf
from reach_otel import semconv as sc

__all__ = [
    "NO_OUTCOME",
    "from_target",
    "has_transitions",
    "is_recorded",
    "next_run",
    "outcomes_sql",
    "recorded_sql",
]

ERROR_CODE: Final = 2  # OTLP STATUS_CODE_ERROR
# Statuses that say nothing about the outcome unless the state machine moved (transitions > 0).
NO_OUTCOME: Final = (hf.UNKNOWN, hf.CREATED)
# JSON types DuckDB reports for a number; a string or boolean "3" is not a transition count.
_NUMBER_TYPES: Final = ("UBIGINT", "BIGINT", "DOUBLE")


def has_transitions(value: Any) -> bool:
    """``reach.handoff.transitions`` counts a state-machine step: a number above 0."""
    return value.__class__ in (int, float) and value > 0


def is_recorded(status: str | None, transitions: Any) -> bool:
    """Whether the span's own status is the handoff's outcome (else it is inferred)."""
    if not status:
        return False
    return status not in NO_OUTCOME or has_transitions(transitions)


def from_target(target_status_code: int | None) -> str:
    """The inferred outcome from the target's next agent span (None: there is none)."""
    if target_status_code is None:
        return hf.UNKNOWN
    return hf.FAILED if target_status_code == ERROR_CODE else hf.COMMITTED


def next_run(handoff_start_ns: int, runs: Sequence[tuple[int, str, int]]) -> int | None:
    """Status code of the target's next agent span, from its runs in the trace as
    ``(start_ns, span_id, status_code)`` sorted: the earliest (then lowest span id) starting at
    or after the handoff; None when there is none."""
    i = bisect_left(runs, (handoff_start_ns,))
    return runs[i][2] if i < len(runs) else None


def recorded_sql(status: str = "handoff_status", attributes: str = "attributes") -> tuple[str, list[Any]]:
    """The SQL boolean of ``is_recorded`` over span columns, with its parameters in order."""
    path = '$."' + sc.REACH_HANDOFF_TRANSITIONS + '"'
    numbers = ", ".join("?" * len(_NUMBER_TYPES))
    # A CASE, so the attributes JSON is parsed only for the few spans whose status says nothing.
    sql = (
        f"(CASE WHEN coalesce({status}, '') = '' THEN false WHEN {status} NOT IN (?, ?) THEN true"
        f" ELSE coalesce(json_type(json_extract({attributes}, ?)) IN ({numbers})"
        f" AND TRY_CAST(json_extract({attributes}, ?) AS DOUBLE) > 0, false) END)"
    )
    return sql, [*NO_OUTCOME, path, *_NUMBER_TYPES, path]


# Columns of a handoff span ``outcomes_sql`` always reads; callers may name more.
_BASE: Final = ("trace_id", "span_id", "start_ns", "handoff_target", "handoff_status")


def outcomes_sql(
    lo: int,
    hi: int,
    since: int | None,
    columns: Sequence[str] = (),
    where: str = "",
    where_params: Sequence[Any] = (),
    until: int | None = None,
) -> tuple[str, list[Any]]:
    """A ``WITH`` clause ending in ``e``: one row per handoff span ending in ``(lo, hi]`` (and
    matching ``where``, an ``AND …`` over span columns), with its outcome ``status``, ``inferred``
    and the handoff span's ``columns``. ``since`` bounds the search for the target's next agent
    span (any time at or before the earliest handoff start: such a span starts, so ends, after its
    handoff); None takes that earliest start itself. ``until`` is the latest end of a target span
    that counts (None: ``hi``, the outcome as of the window's end). Columns are the caller's
    constants, never user input; parameters come back in order."""
    recorded, recorded_params = recorded_sql()
    picked = list(dict.fromkeys((*_BASE, *columns)))
    sql = (
        "WITH h AS ("
        f" SELECT {', '.join(picked)}, NOT {recorded} AS bare"
        f" FROM spans WHERE end_ns > ? AND end_ns <= ? AND operation = ?{where}),"
        " t AS (SELECT trace_id, agent, start_ns, span_id, status_code FROM spans"
        f"  WHERE end_ns >= {'?' if since is not None else '(SELECT min(start_ns) FROM h WHERE bare)'}"
        "  AND end_ns <= ? AND operation = ?"
        "  AND trace_id IN (SELECT trace_id FROM h WHERE bare)),"
        " nxt AS (SELECT h.span_id, h.trace_id,"
        "  arg_min(t.status_code, {'s': t.start_ns, 'i': t.span_id}) AS target_code"
        "  FROM h JOIN t ON t.trace_id = h.trace_id AND t.agent = h.handoff_target"
        "  AND t.start_ns >= h.start_ns WHERE h.bare GROUP BY h.span_id, h.trace_id),"
        " e AS (SELECT CASE WHEN NOT h.bare THEN h.handoff_status"
        "   WHEN nxt.target_code IS NULL THEN ? WHEN nxt.target_code = ? THEN ? ELSE ? END AS status,"
        f"   h.bare AS inferred{''.join(f', h.{c}' for c in columns)}"
        "  FROM h LEFT JOIN nxt ON nxt.span_id = h.span_id AND nxt.trace_id = h.trace_id)"
    )
    params = [
        *recorded_params,
        lo,
        hi,
        sc.OP_HANDOFF,
        *where_params,
        *([since] if since is not None else []),
        hi if until is None else until,
        sc.OP_AGENT,
        hf.UNKNOWN,
        ERROR_CODE,
        hf.FAILED,
        hf.COMMITTED,
    ]
    return sql, params

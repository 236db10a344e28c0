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

from reach_collector.store.dialect import DUCKDB, Dialect
from reach_otel import handoff_state as hf
from reach_otel import semconv as sc

__all__ = [
    "NO_OUTCOME",
    "from_target",
    "has_transitions",
    "is_recorded",
    "next_run",
    "next_run_index",
    "outcomes_sql",
    "recorded_sql",
]

ERROR_CODE: Final = 2  # OTLP STATUS_CODE_ERROR
# Statuses that say nothing about the outcome unless the state machine moved (transitions > 0).
NO_OUTCOME: Final = (hf.UNKNOWN, hf.CREATED)


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
    i = next_run_index(handoff_start_ns, runs)
    return runs[i][2] if i is not None else None


def next_run_index(handoff_start_ns: int, runs: Sequence[tuple[int, str, int]]) -> int | None:
    """Where in ``runs`` (as ``next_run`` takes them) the target's next agent span is; None: none."""
    i = bisect_left(runs, (handoff_start_ns,))
    return i if i < len(runs) else None


def recorded_sql(
    dialect: Dialect = DUCKDB, status: str = "handoff_status", attributes: str = "attributes"
) -> tuple[str, list[Any]]:
    """The SQL boolean (1 or 0) of ``is_recorded`` over span columns, with its parameters in order.
    A CASE, so the attributes are read only for the few spans whose status says nothing; the
    transitions count is the attribute's JSON text read as a number (a quoted "3", a boolean or
    anything else that is not a number reads as 0)."""
    transitions, params = dialect.attr_json(attributes, sc.REACH_HANDOFF_TRANSITIONS)
    sql = (
        f"(CASE WHEN coalesce({status}, '') = '' THEN 0 WHEN {status} NOT IN (?, ?) THEN 1"
        f" WHEN {dialect.float_or_zero(transitions)} > 0 THEN 1 ELSE 0 END)"
    )
    return sql, [*NO_OUTCOME, *params]


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
    dialect: Dialect = DUCKDB,
) -> tuple[str, list[Any]]:
    """A subquery (use it as ``FROM (…) AS e``): one row per handoff span ending in ``(lo, hi]``
    (and matching ``where``, an ``AND …`` over span columns), with its outcome ``status``,
    ``inferred`` (1 or 0) and the handoff span's ``columns``. ``since`` bounds the search for the
    target's next agent span (any time at or before the earliest handoff start: such a span
    starts, so ends, after its handoff); None takes that earliest start itself. ``until`` is the
    latest end of a target span that counts (None: ``hi``, the outcome as of the window's end).
    Columns are the caller's constants, never user input; parameters come back in order.

    Written in the subset both stores take, as named parts (``Dialect.compose``: a ``WITH`` on
    DuckDB, inlined on ClickHouse); the join is on equalities with the time test after it, and a
    handoff with no target run is told apart by ``found`` (0 on ClickHouse's LEFT JOIN, NULL on
    DuckDB's)."""
    recorded, recorded_params = recorded_sql(dialect)
    picked = list(dict.fromkeys((*_BASE, *columns)))
    h = (
        f"SELECT {', '.join(picked)}, {recorded} AS recorded"
        f" FROM spans WHERE end_ns > ? AND end_ns <= ? AND operation = ?{where}"
    )
    bare = "SELECT trace_id, span_id, start_ns, handoff_target FROM {h} WHERE recorded = 0"
    first = "?" if since is not None else "(SELECT min(start_ns) FROM {bare})"
    t = (
        "SELECT trace_id AS t_trace, agent AS t_agent, start_ns AS t_start, span_id AS t_span,"
        f" status_code AS t_code FROM spans WHERE end_ns >= {first} AND end_ns <= ? AND operation = ?"
        " AND trace_id IN (SELECT trace_id FROM {bare})"
    )
    nxt = (
        "SELECT n_trace, n_span, argMin(t_code, (t_start, t_span)) AS target_code, 1 AS found FROM ("
        " SELECT b.trace_id AS n_trace, b.span_id AS n_span, b.start_ns AS n_start, t_start, t_span, t_code"
        " FROM {bare} AS b JOIN {t} AS t ON t.t_trace = b.trace_id AND t.t_agent = b.handoff_target"
        ") WHERE t_start >= n_start GROUP BY n_trace, n_span"
    )
    body = (
        "SELECT CASE WHEN h.recorded = 1 THEN h.handoff_status WHEN coalesce(nxt.found, 0) = 0 THEN ?"
        " WHEN nxt.target_code = ? THEN ? ELSE ? END AS status,"
        f" 1 - h.recorded AS inferred{''.join(f', h.{c} AS {c}' for c in columns)}"
        " FROM {h} AS h LEFT JOIN {nxt} AS nxt ON nxt.n_span = h.span_id AND nxt.n_trace = h.trace_id"
    )
    return dialect.compose(
        [
            ("h", h, [*recorded_params, lo, hi, sc.OP_HANDOFF, *where_params]),
            ("bare", bare, []),
            ("t", t, [*([since] if since is not None else []), hi if until is None else until, sc.OP_AGENT]),
            ("nxt", nxt, []),
        ],
        body,
        [hf.UNKNOWN, ERROR_CODE, hf.FAILED, hf.COMMITTED],
    )

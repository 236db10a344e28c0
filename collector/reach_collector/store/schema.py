"""The DuckDB schema: a flat span table with promoted columns, and the trace lookup table.

The span table is append-only in arrival order (so time-window queries prune row groups by their
zone maps); the lookup table maps trace_id → its time range, which makes trace-by-id two cheap
reads. Both are written in the same transaction by the writer.
"""

from __future__ import annotations

from typing import Final

from reach_collector.store import summary
from reach_collector.store.span_columns import ARROW_SCHEMA, SPAN_COLUMNS, SPAN_NAMES
from reach_collector.store.summary import SUMMARY, Column

__all__ = ["ARROW_SCHEMA", "PARTS_ARROW_SCHEMA", "SPAN_COLUMNS", "SPAN_NAMES", "TRACE_COLUMNS"]

_span_cols = ",\n    ".join(f"{name} {sql}" for name, sql, _ in SPAN_COLUMNS)

# The lookup row of a trace: its summary (store.summary). Ingest appends one *part* per (batch,
# trace) to trace_parts — a plain insert, cheap enough for every commit; the writer folds parts into
# `traces` (an upsert on the primary key) in large batches between commits. Queries merge the two,
# so both are always right.
_TRACE_COLS = ",\n    ".join(f"{c.name} {summary.duckdb_type(c)}" for c in SUMMARY)
TRACE_COLUMNS: Final = ("trace_id", *summary.SUMMARY_NAMES)
PARTS_ARROW_SCHEMA: Final = summary.PARTS_ARROW_SCHEMA


# Per kind of summary column (store.summary), its DuckDB SQL: (computed from span rows, merged
# over lookup rows of one trace, a `traces` row upserted with a row of the same trace). Fields:
# {value} the span column, {by} the span column ordering an arg_min and {order} its summary column,
# {cond} the condition as a FILTER clause, {type} the column's type, {name} the column.
_SQL: Final = {
    "min": ("min({value}){cond}", "min({name})", "least(traces.{name}, EXCLUDED.{name})"),  # NULLs ignored
    "max": ("max({value}){cond}", "max({name})", "greatest(traces.{name}, EXCLUDED.{name})"),
    "count": ("count(*){cond}", "sum({name})::BIGINT", "traces.{name} + EXCLUDED.{name}"),
    "arg_min": (
        "arg_min({value}, {by}){cond}",
        "arg_min({name}, {order})",
        "CASE WHEN EXCLUDED.{name} IS NOT NULL AND (traces.{order} IS NULL OR EXCLUDED.{order} < "
        "traces.{order}) THEN EXCLUDED.{name} ELSE traces.{name} END",
    ),
    "set": (
        "coalesce(list_distinct(list({value}){cond}), []::{type})",
        "list_distinct(flatten(list({name})))",
        "list_distinct(list_concat(traces.{name}, EXCLUDED.{name}))",
    ),
}


def _sql(c: Column, form: int) -> str:
    return _SQL[c.kind][form].format(
        value=c.value,
        by=summary.by_value(c) if c.by else None,
        order=c.by,
        cond="" if c.when is None else f" FILTER (WHERE {c.when.sql()})",
        type=summary.duckdb_type(c),
        name=c.name,
    )


def merged(name: str) -> str:
    """A summary column merged over the lookup rows of one trace (an aggregate)."""
    return _sql(summary.BY_NAME[name], 1)


# Small append-only tables beside the spans: POST /api/heartbeats, the alert history (one row per
# transition, delivery attempt and acknowledgement) and evaluations. Times are unix nanoseconds.
AUX_TABLES: Final = {
    "heartbeats": (
        "agent_id VARCHAR, time_ns BIGINT, service VARCHAR, endpoint VARCHAR, capabilities VARCHAR, "
        "status VARCHAR"  # NULL or 'live'; 'stopped' when the agent deregistered on a clean exit
    ),
    "alert_transitions": (
        "time_ns BIGINT, alertname VARCHAR, severity VARCHAR, fingerprint VARCHAR, labels VARCHAR, "
        "from_state VARCHAR, to_state VARCHAR, value DOUBLE, annotations VARCHAR, "
        "active_at_ns BIGINT, fired_at_ns BIGINT, resolved_at_ns BIGINT"
    ),
    "alert_deliveries": (
        "time_ns BIGINT, delivery_id BIGINT, kind VARCHAR, fingerprint VARCHAR, alertname VARCHAR, "
        "recipient VARCHAR, url VARCHAR, attempt INTEGER, ok BOOLEAN, retryable BOOLEAN, "
        "error VARCHAR, next_retry_at_ns BIGINT"
    ),
    "alert_acks": "fingerprint VARCHAR, acked_by VARCHAR, time_ns BIGINT, fired_at_ns BIGINT",
    # gen_ai.evaluation.result events (OTLP logs, span events, POST /api/feedback): joined to their
    # span at read time (query.evaluations), by trace and span id, else by response_id. ``source``
    # says how it came: log, span_event or feedback.
    "evaluations": (
        "time_ns BIGINT, trace_id VARCHAR, span_id VARCHAR, response_id VARCHAR, name VARCHAR, "
        "score DOUBLE, label VARCHAR, explanation VARCHAR, error_type VARCHAR, service VARCHAR, "
        "source VARCHAR"
    ),
}
AUX_COLUMNS: Final = {
    name: tuple(col.split()[0] for col in cols.split(", ")) for name, cols in AUX_TABLES.items()
}

DDL: Final = (
    f"CREATE TABLE IF NOT EXISTS spans (\n    {_span_cols}\n)",
    f"CREATE TABLE IF NOT EXISTS traces (\n    trace_id VARCHAR PRIMARY KEY,\n    {_TRACE_COLS},\n"
    "    trace_key UBIGINT\n)",
    f"CREATE TABLE IF NOT EXISTS trace_parts (\n    trace_id VARCHAR,\n    {_TRACE_COLS}\n)",
    "CREATE TABLE IF NOT EXISTS reach_meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
    *(f"CREATE TABLE IF NOT EXISTS {name} (\n    {cols}\n)" for name, cols in AUX_TABLES.items()),
    # Files written before heartbeats had a status.
    "ALTER TABLE heartbeats ADD COLUMN IF NOT EXISTS status VARCHAR",
)

# Per-trace summaries of a span table, in SQL (the decoder computes the same rows while it
# flattens; this form rebuilds parts from stored spans, e.g. for benchmarks and repairs).
PART_INSERT: Final = (
    "\nINSERT INTO trace_parts\nSELECT trace_id,\n       "
    + ",\n       ".join(_sql(c, 0) for c in SUMMARY)
    + "\nFROM {batch}\nGROUP BY trace_id\n"
)

# Merging lookup rows (parts, or a traces row with parts) of the same trace.
MERGED: Final = "trace_id,\n       " + ",\n       ".join(f"{merged(c.name)} AS {c.name}" for c in SUMMARY)

# `traces.trace_key`: the trace id's first 16 hex digits as a number (NULL for an id that is not
# hex), not indexed. While a checkpoint runs, DuckDB holds back every query that filters `traces`
# on its primary-key column, for the whole checkpoint; a filter on trace_key scans the table
# instead and is not held back. ``TRACE_KEY_OF`` is the same value for a bound parameter.
TRACE_KEY: Final = "TRY_CAST('0x' || left(trace_id, 16) AS UBIGINT)"
TRACE_KEY_OF: Final = "TRY_CAST('0x' || left(?::VARCHAR, 16) AS UBIGINT)"
# Stores created before trace_key: add and fill it (once, at open, in one transaction).
ADD_TRACE_KEY: Final = (
    "ALTER TABLE traces ADD COLUMN trace_key UBIGINT",
    f"UPDATE traces SET trace_key = {TRACE_KEY}",
)

# Fold every part into `traces` (run by the writer between commits, inside one transaction).
_UPSERT: Final = ",\n    ".join(f"{c.name} = {_sql(c, 2)}" for c in SUMMARY)
COMPACT: Final = f"""
INSERT INTO traces ({", ".join(TRACE_COLUMNS)}, trace_key)
SELECT {MERGED}, {TRACE_KEY} FROM trace_parts GROUP BY trace_id
ON CONFLICT (trace_id) DO UPDATE SET
    {_UPSERT}
"""

# --- alert history SQL -----------------------------------------------------------------------
# Transitions at the same instant (for: 0 goes inactive → pending → firing at once): later state wins.
_RANK: Final = "CASE to_state WHEN 'pending' THEN 1 WHEN 'firing' THEN 2 WHEN 'resolved' THEN 3 ELSE 0 END"
# The last transition of each episode (one fingerprint, one active_at).
EPISODES: Final = f"""
SELECT fingerprint, alertname, severity, labels, annotations, to_state, value,
       active_at_ns, fired_at_ns, resolved_at_ns, time_ns
FROM alert_transitions
QUALIFY row_number() OVER (
    PARTITION BY fingerprint, active_at_ns ORDER BY time_ns DESC, {_RANK} DESC) = 1
"""

# Episodes still pending or firing: what a restarted engine restores, so retention keeps them.
_ACTIVE: Final = (
    f"SELECT fingerprint, active_at_ns, fired_at_ns FROM ({EPISODES}) WHERE to_state IN ('pending', 'firing')"
)
# Retention of the alert history (each takes the cutoff, unix ns): older rows go, except the
# transitions and acknowledgements of episodes that are still active.
PRUNE_ALERT_HISTORY: Final = (
    f"DELETE FROM alert_transitions t WHERE time_ns < ? AND NOT EXISTS (SELECT 1 FROM ({_ACTIVE}) e "
    "WHERE e.fingerprint = t.fingerprint AND e.active_at_ns IS NOT DISTINCT FROM t.active_at_ns)",
    f"DELETE FROM alert_acks a WHERE time_ns < ? AND NOT EXISTS (SELECT 1 FROM ({_ACTIVE}) e "
    "WHERE e.fingerprint = a.fingerprint AND e.fired_at_ns IS NOT DISTINCT FROM a.fired_at_ns)",
    "DELETE FROM alert_deliveries WHERE time_ns < ?",
)

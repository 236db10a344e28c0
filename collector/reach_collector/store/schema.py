"""The DuckDB schema: a flat span table with promoted columns, and the trace lookup table.

The span table is append-only in arrival order (so time-window queries prune row groups by their
zone maps); the lookup table maps trace_id → its time range, which makes trace-by-id two cheap
reads. Both are written in the same transaction by the writer.
"""

from __future__ import annotations

from typing import Final

import pyarrow as pa

# (name, DuckDB type, Arrow type) in table order; the decoder builds Arrow columns in this order.
SPAN_COLUMNS: Final[tuple[tuple[str, str, pa.DataType], ...]] = (
    ("trace_id", "VARCHAR", pa.string()),
    ("span_id", "VARCHAR", pa.string()),
    ("parent_span_id", "VARCHAR", pa.string()),
    ("name", "VARCHAR", pa.string()),
    ("kind", "UTINYINT", pa.uint8()),
    ("start_ns", "BIGINT", pa.int64()),
    ("end_ns", "BIGINT", pa.int64()),
    ("duration_ms", "DOUBLE", pa.float64()),
    ("status_code", "UTINYINT", pa.uint8()),
    ("status_message", "VARCHAR", pa.string()),
    ("service", "VARCHAR", pa.string()),
    ("operation", "VARCHAR", pa.string()),
    ("agent", "VARCHAR", pa.string()),
    ("tool", "VARCHAR", pa.string()),
    ("model", "VARCHAR", pa.string()),
    ("provider", "VARCHAR", pa.string()),
    ("input_tokens", "BIGINT", pa.int64()),
    ("output_tokens", "BIGINT", pa.int64()),
    ("handoff_source", "VARCHAR", pa.string()),
    ("handoff_target", "VARCHAR", pa.string()),
    ("handoff_status", "VARCHAR", pa.string()),
    ("handoff_mode", "VARCHAR", pa.string()),
    ("hop_count", "INTEGER", pa.int32()),
    ("loop_detected", "BOOLEAN", pa.bool_()),
    ("error_type", "VARCHAR", pa.string()),
    ("conversation_id", "VARCHAR", pa.string()),
    ("trace_state", "VARCHAR", pa.string()),
    ("flags", "UINTEGER", pa.uint32()),
    ("attributes", "VARCHAR", pa.string()),  # JSON object
    ("events", "VARCHAR", pa.string()),  # JSON array or NULL when there are none
    ("links", "VARCHAR", pa.string()),  # JSON array or NULL
    ("resource", "VARCHAR", pa.string()),  # JSON object (flat resource attributes)
    ("scope", "VARCHAR", pa.string()),  # JSON {"name", "version"} or NULL
)

SPAN_NAMES: Final = tuple(name for name, _, _ in SPAN_COLUMNS)
ARROW_SCHEMA: Final = pa.schema([(name, arrow) for name, _, arrow in SPAN_COLUMNS])

_span_cols = ",\n    ".join(f"{name} {sql}" for name, sql, _ in SPAN_COLUMNS)

# The lookup row of a trace. Ingest appends one *part* per (batch, trace) to trace_parts — a plain
# insert, cheap enough for every commit; the writer folds parts into `traces` (an upsert on the
# primary key) in large batches between commits. Queries merge the two, so both are always right.
_TRACE_COLS = """first_start_ns BIGINT,
    last_end_ns BIGINT,
    root_name VARCHAR,
    root_start_ns BIGINT,
    first_name VARCHAR,
    span_count BIGINT,
    error_count BIGINT,
    agents VARCHAR[],
    services VARCHAR[],
    hops BIGINT"""
TRACE_COLUMNS: Final = (
    "trace_id",
    "first_start_ns",
    "last_end_ns",
    "root_name",
    "root_start_ns",
    "first_name",
    "span_count",
    "error_count",
    "agents",
    "services",
    "hops",
)

PARTS_ARROW_SCHEMA: Final = pa.schema(
    [
        ("trace_id", pa.string()),
        ("first_start_ns", pa.int64()),
        ("last_end_ns", pa.int64()),
        ("root_name", pa.string()),
        ("root_start_ns", pa.int64()),
        ("first_name", pa.string()),
        ("span_count", pa.int64()),
        ("error_count", pa.int64()),
        ("agents", pa.list_(pa.string())),
        ("services", pa.list_(pa.string())),
        ("hops", pa.int64()),
    ]
)

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

# Per-trace aggregates of a span table, in SQL (the decoder computes the same rows while it
# flattens; this form rebuilds parts from stored spans, e.g. for benchmarks and repairs).
PART_INSERT: Final = """
INSERT INTO trace_parts
SELECT trace_id,
       min(start_ns),
       max(end_ns),
       arg_min(name, start_ns) FILTER (WHERE parent_span_id IS NULL),
       min(start_ns) FILTER (WHERE parent_span_id IS NULL),
       arg_min(name, start_ns),
       count(*),
       count(*) FILTER (WHERE status_code = 2),
       coalesce(list_distinct(list(agent) FILTER (WHERE operation = 'invoke_agent' AND agent IS NOT NULL)),
                []::VARCHAR[]),
       coalesce(list_distinct(list(service) FILTER (WHERE service IS NOT NULL)), []::VARCHAR[]),
       count(*) FILTER (WHERE operation = 'handoff')
FROM {batch}
GROUP BY trace_id
"""

# Merging lookup rows (parts, or a traces row with parts) of the same trace.
MERGED: Final = """trace_id,
       min(first_start_ns) AS first_start_ns,
       max(last_end_ns) AS last_end_ns,
       arg_min(root_name, root_start_ns) AS root_name,
       min(root_start_ns) AS root_start_ns,
       arg_min(first_name, first_start_ns) AS first_name,
       sum(span_count)::BIGINT AS span_count,
       sum(error_count)::BIGINT AS error_count,
       list_distinct(flatten(list(agents))) AS agents,
       list_distinct(flatten(list(services))) AS services,
       sum(hops)::BIGINT AS hops"""

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
COMPACT: Final = f"""
INSERT INTO traces ({", ".join(TRACE_COLUMNS)}, trace_key)
SELECT {MERGED}, {TRACE_KEY} FROM trace_parts GROUP BY trace_id
ON CONFLICT (trace_id) DO UPDATE SET
    first_name = CASE WHEN EXCLUDED.first_start_ns < traces.first_start_ns
                      THEN EXCLUDED.first_name ELSE traces.first_name END,
    root_name = CASE WHEN EXCLUDED.root_name IS NOT NULL
                      AND (traces.root_start_ns IS NULL OR EXCLUDED.root_start_ns < traces.root_start_ns)
                     THEN EXCLUDED.root_name ELSE traces.root_name END,
    root_start_ns = CASE WHEN EXCLUDED.root_name IS NOT NULL
                      AND (traces.root_start_ns IS NULL OR EXCLUDED.root_start_ns < traces.root_start_ns)
                     THEN EXCLUDED.root_start_ns ELSE traces.root_start_ns END,
    first_start_ns = least(traces.first_start_ns, EXCLUDED.first_start_ns),
    last_end_ns = greatest(traces.last_end_ns, EXCLUDED.last_end_ns),
    span_count = traces.span_count + EXCLUDED.span_count,
    error_count = traces.error_count + EXCLUDED.error_count,
    agents = list_distinct(list_concat(traces.agents, EXCLUDED.agents)),
    services = list_distinct(list_concat(traces.services, EXCLUDED.services)),
    hops = traces.hops + EXCLUDED.hops
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

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

DDL: Final = (
    f"CREATE TABLE IF NOT EXISTS spans (\n    {_span_cols}\n)",
    """CREATE TABLE IF NOT EXISTS traces (
    trace_id VARCHAR PRIMARY KEY,
    first_start_ns BIGINT,
    last_end_ns BIGINT,
    root_name VARCHAR,
    root_start_ns BIGINT,
    first_name VARCHAR,
    span_count BIGINT,
    error_count BIGINT,
    agents VARCHAR[],
    services VARCHAR[],
    hops BIGINT
)""",
    "CREATE TABLE IF NOT EXISTS reach_meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
)

# Upsert one batch's per-trace aggregates into the lookup table (same transaction as the spans).
TRACE_UPSERT: Final = """
INSERT INTO traces
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

"""The span table's columns: name, DuckDB type and Arrow type, in table order (the decoder builds
its Arrow columns in this order; the ClickHouse schema names the same columns)."""

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

"""The ClickHouse schema, in SQL that ClickHouse 18.16 (Debian's) and current releases both take:
the span table, the trace lookup fed by a materialized view, the side tables, and the migrations
that create them, one node or a cluster (local tables on every shard behind ``Distributed`` ones).

- ``spans``: the DuckDB span columns under the same names (the shared queries name them), plus
  the attributes and resource as parallel key/value arrays (``attr_keys``/``attr_values``,
  ``res_keys``/``res_values``; values as DuckDB's ``json_extract_string`` gives them). Times are
  **Int64** nanoseconds, as DuckDB's BIGINT: the decoder keeps them below 2^63, and signed
  arithmetic never wraps (``end_ns - start_ns``, ``x - ?`` with a later bound), where UInt64
  subtraction would. Partitioned by the hour of ``end_ns`` and ordered by (minute of ``end_ns``,
  trace_id, start_ns), since every window query asks for the spans that *ended* in it: a window
  reads only its own hours' partitions and, in them, its minutes; a trace reads its minutes'
  trace_id ranges (its spans all end within its first start and last end); retention drops the
  hours that ended before the cutoff.
- ``traces``: per (hour of the spans' end, trace_id) aggregate states of the trace's spans (first
  start, last end, root, counts, agents, services, hops) — an AggregatingMergeTree the
  materialized view ``traces_mv`` fills from every insert into the span table, in the same insert,
  partitioned as the spans are (retention drops both by the same hours).
- ``heartbeats``, ``alert_*``, ``evaluations``: the side tables of ``store.schema.AUX_TABLES``,
  Nullable columns but ``time_ns``, partitioned by day.
- ``schema_version``: one row per migration applied (on each shard, in a cluster).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from reach_collector.store import summary
from reach_collector.store.schema import AUX_TABLES, SPAN_NAMES
from reach_collector.store.summary import SUMMARY, Column, Condition

__all__ = [
    "BUCKET_NS",
    "HOUR_NS",
    "INSERT_COLUMNS",
    "SCHEMA_VERSION",
    "SPAN_TYPES",
    "TABLES",
    "VERSIONS",
    "Layout",
]

HOUR_NS: Final = 3_600_000_000_000  # a span partition: one hour of end times
BUCKET_NS: Final = 60_000_000_000  # the leading sort key: one minute of end times
DAY_NS: Final = 86_400_000_000_000  # a side-table partition

# ClickHouse types of the DuckDB span columns (store.schema.SPAN_COLUMNS), Nullable where the
# decoder writes NULL. The columns that are never NULL there are plain (a NULL that came anyway
# is stored as the type's default, see convert).
SPAN_TYPES: Final[dict[str, str]] = {
    "trace_id": "String",
    "span_id": "String",
    "parent_span_id": "Nullable(String)",
    "name": "String",
    "kind": "UInt8",
    "start_ns": "Int64",
    "end_ns": "Int64",
    "duration_ms": "Float64",
    "status_code": "UInt8",
    "status_message": "String",
    "service": "Nullable(String)",
    "operation": "Nullable(String)",
    "agent": "Nullable(String)",
    "tool": "Nullable(String)",
    "model": "Nullable(String)",
    "provider": "Nullable(String)",
    "input_tokens": "Nullable(Int64)",
    "output_tokens": "Nullable(Int64)",
    "handoff_source": "Nullable(String)",
    "handoff_target": "Nullable(String)",
    "handoff_status": "Nullable(String)",
    "handoff_mode": "Nullable(String)",
    "hop_count": "Nullable(Int32)",
    "loop_detected": "Nullable(UInt8)",  # BOOLEAN in DuckDB; 18.16 has no Bool
    "error_type": "Nullable(String)",
    "conversation_id": "Nullable(String)",
    "trace_state": "Nullable(String)",
    "flags": "UInt32",
    "attributes": "String",
    "events": "Nullable(String)",
    "links": "Nullable(String)",
    "resource": "String",
    "scope": "Nullable(String)",
}
KV_COLUMNS: Final = (
    ("attr_keys", "Array(String)"),
    ("attr_values", "Array(String)"),
    ("res_keys", "Array(String)"),
    ("res_values", "Array(String)"),
)
if tuple(SPAN_TYPES) != SPAN_NAMES:  # pragma: no cover - a new DuckDB column needs its type here
    raise ImportError("clickhouse SPAN_TYPES and store.schema.SPAN_COLUMNS differ")
INSERT_COLUMNS: Final = (*SPAN_NAMES, *(name for name, _ in KV_COLUMNS))

_DUCK_TYPES: Final = {
    "VARCHAR": "String",
    "BIGINT": "Int64",
    "DOUBLE": "Float64",
    "INTEGER": "Int32",
    "BOOLEAN": "UInt8",
}
# Side table → [(column, ClickHouse type)], in store.schema.AUX_TABLES order.
AUX_TYPES: Final[dict[str, list[tuple[str, str]]]] = {
    table: [
        (name, "Int64" if name == "time_ns" else f"Nullable({_DUCK_TYPES[duck]})")
        for name, duck in (col.split() for col in cols.split(", "))
    ]
    for table, cols in AUX_TABLES.items()
}
TABLES: Final = ("spans", "traces", *AUX_TABLES)


def _plain(span_column: str) -> str:
    kind = SPAN_TYPES[span_column]
    return kind[len("Nullable(") : -1] if kind.startswith("Nullable(") else kind


def _aggregate(c: Column) -> tuple[str, str, str, str]:
    """(column, aggregate state type, the state the view computes from span rows, its merge) of
    one summary column (store.summary): ``<f>``, or ``<f>If`` with its condition as a flag."""
    args: list[tuple[str, str]] = []  # (expression, type) of the aggregate's arguments
    if c.kind == "set":
        assert c.value is not None
        fn, args = "groupUniqArray", [(f"assumeNotNull({c.value})", _plain(c.value))]
    elif c.kind == "count":
        fn = "count"
    elif c.kind == "arg_min":
        assert c.value is not None
        by = summary.by_value(c)
        fn, args = "argMin", [(c.value, _plain(c.value)), (by, _plain(by))]
    else:
        assert c.value is not None
        fn, args = c.kind, [(c.value, _plain(c.value))]
    if c.when is not None:
        fn += "If"
        args.append((_flag(c.when), "UInt8"))
    state_type = ", ".join([fn, *(kind for _, kind in args)])
    state = f"{fn}State({', '.join(expr for expr, _ in args)})"
    return c.name, f"AggregateFunction({state_type})", state, f"{fn}Merge"


def _flag(when: Condition) -> str:
    return f"ifNull({when.sql()}, 0)"  # a NULL comparison counts as false, as on DuckDB


def _aggregates() -> tuple[tuple[str, str, str, str], ...]:
    """The summary's states in declaration order; a condition's ``presence`` count follows the
    last column it conditions (a ``minIf`` of no span is 0, not NULL: reads check the count)."""
    out = [_aggregate(c) for c in SUMMARY]
    for when in dict.fromkeys(c.when for c in SUMMARY if c.when is not None and c.when.presence):
        assert when.presence is not None
        last = max(i for i, c in enumerate(SUMMARY) if c.when == when)
        count = f"countIfState({_flag(when)})"
        out.insert(last + 1, (when.presence, "AggregateFunction(countIf, UInt8)", count, "countIfMerge"))
    return tuple(out)


# (column, aggregate state type, the state the view computes from span rows, its merge)
TRACE_AGGREGATES: Final = _aggregates()


@dataclass(frozen=True)
class Layout:
    """Table names in one database: one node (``cluster`` None) keeps the data in ``spans``...; a
    cluster keeps it in ``spans_local``... on every shard, with ``spans``... ``Distributed``
    over them."""

    database: str
    cluster: str | None = None

    def local(self, table: str) -> str:
        return f"{table}_local" if self.cluster else table

    def q(self, table: str) -> str:
        """``database.table`` (names are checked identifiers, see url)."""
        return f"{self.database}.{table}"

    def table_ddl(self) -> list[str]:
        """The tables, view and (in a cluster) Distributed tables of the latest schema version, each
        statement idempotent (IF NOT EXISTS), for one node or one shard."""
        span_cols = [*SPAN_TYPES.items(), *KV_COLUMNS]
        trace_cols = [("end_hour", "Int64"), ("trace_id", "String")]
        trace_cols += [(name, kind) for name, kind, _, _ in TRACE_AGGREGATES]
        out = [
            _create(
                self.q(self.local("spans")),
                span_cols,
                f"MergeTree PARTITION BY intDiv(end_ns, {HOUR_NS}) "
                f"ORDER BY (intDiv(end_ns, {BUCKET_NS}), trace_id, start_ns)",
            ),
            _create(
                self.q(self.local("traces")),
                trace_cols,
                "AggregatingMergeTree PARTITION BY end_hour ORDER BY trace_id",
            ),
            f"CREATE MATERIALIZED VIEW IF NOT EXISTS {self.q(self.local('traces') + '_mv')} "
            f"TO {self.q(self.local('traces'))} "
            f"AS SELECT intDiv(end_ns, {HOUR_NS}) AS end_hour, trace_id, "
            + ", ".join(f"{state} AS {name}" for name, _, state, _ in TRACE_AGGREGATES)
            + f" FROM {self.q(self.local('spans'))} GROUP BY end_hour, trace_id",
        ]
        for table in AUX_TYPES:
            out.append(self._side_table(table))
        if self.cluster:
            shard_keys = {"spans": "cityHash64(trace_id)", "traces": "cityHash64(trace_id)"}
            for table, cols in (("spans", span_cols), ("traces", trace_cols)):
                out.append(self._distributed(table, cols, shard_keys[table]))
            for table, cols in AUX_TYPES.items():
                out.append(self._distributed(table, cols, "rand()"))
        return out

    def side_table_ddl(self, table: str) -> list[str]:
        """One side table of ``AUX_TYPES`` (and, in a cluster, its Distributed table), idempotent:
        what an upgrade that brings a new side table runs."""
        out = [self._side_table(table)]
        if self.cluster:
            out.append(self._distributed(table, AUX_TYPES[table], "rand()"))
        return out

    def _side_table(self, table: str) -> str:
        return _create(
            self.q(self.local(table)),
            AUX_TYPES[table],
            f"MergeTree PARTITION BY intDiv(time_ns, {DAY_NS}) ORDER BY time_ns",
        )

    def _distributed(self, table: str, cols: list[tuple[str, str]], key: str) -> str:
        engine = f"Distributed({self.cluster}, {self.database}, {self.local(table)}, {key})"
        return _create(self.q(table), cols, engine)


def _create(name: str, columns: list[tuple[str, str]], engine: str) -> str:
    cols = ",\n    ".join(f"{col} {kind}" for col, kind in columns)
    return f"CREATE TABLE IF NOT EXISTS {name} (\n    {cols}\n) ENGINE = {engine}"


# The schema's version and what each one brought. A new database is created at the latest (the
# tables of ``Layout.table_ddl``); an older one is upgraded a version at a time (migrate.UPGRADES).
# Each upgrade must be safe to run twice (18.16 has no ``ADD COLUMN IF NOT EXISTS``: check
# system.columns first), since two collectors starting at once may both apply it.
VERSIONS: Final = {
    1: "spans by start time, the trace lookup and its view, heartbeats, alert history",
    2: "spans and the trace lookup partitioned and ordered by the spans' end time",
    3: "evaluations (gen_ai.evaluation.result events and user feedback)",
}
SCHEMA_VERSION: Final = max(VERSIONS)

SCHEMA_VERSION_DDL: Final = (
    "CREATE TABLE IF NOT EXISTS {db}.schema_version "
    "(version UInt32, description String, applied_ns Int64) ENGINE = MergeTree ORDER BY version"
)

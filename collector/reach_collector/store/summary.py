"""The per-trace summary (the trace lookup row), declared once.

Each column of ``SUMMARY`` says how one span contributes to it (``kind`` over span column
``value``, for the spans ``when`` holds) and so how two summaries of the same trace merge:

- ``min`` / ``max``: the least / greatest value (NULL when no span counts);
- ``arg_min``: ``value`` of the span with the least ``by`` — the summary column (a ``min`` of the
  same condition) whose span value orders them, so two summaries merge by comparing it;
- ``count``: how many spans count (summaries add up);
- ``set``: the distinct values (summaries unite; sorted in a part).

From it come the DuckDB lookup tables and their fold, merge and upsert SQL (``store.schema``), the
ClickHouse aggregate states (``store.clickhouse.schema.TRACE_AGGREGATES``) and the reading of
their merge (``store.clickhouse.reads``), the decoder's Python fold (``fold``, written out here at
import) and the compiled decoder's fold: ``_fastflat`` has one primitive fold per kind and one
check per test, and folds by the declaration it is configured with (``compiled``), so a new column
of these kinds needs nothing there. tests/clickhouse/test_trace_summary.py checks that all of them
give the same summaries.

Conditions are conjunctions of ``Test`` atoms, read the same in SQL (NULL counts as false), in
Python over a span row (``store.span_columns.SPAN_COLUMNS`` order) and in the compiled decoder.
A store that computes the summaries itself (ClickHouse's materialized view) says so in its
``WriteProfile.computes_summary``; the decoders then build no parts for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import pyarrow as pa

from reach_collector.store.span_columns import SPAN_COLUMNS, SPAN_NAMES
from reach_otel import semconv as sc

__all__ = [
    "SUMMARY",
    "SUMMARY_NAMES",
    "Column",
    "Condition",
    "Test",
    "compiled",
    "fold",
    "new_part",
    "parts_table",
]

Kind = Literal["min", "max", "arg_min", "count", "set"]
Op = Literal["null", "not_null", "eq", "non_empty"]
# In the order of the compiled decoder's SK_* and ST_* enums (see ``compiled``).
KINDS: Final[tuple[Kind, ...]] = ("min", "max", "arg_min", "count", "set")
OPS: Final[tuple[Op, ...]] = ("null", "not_null", "eq", "non_empty")


@dataclass(frozen=True)
class Test:
    """One test of a span column: NULL (``null``), not NULL, equal to ``literal``, or a non-empty
    string (``non_empty``: neither NULL nor ``''``)."""

    column: str
    op: Op
    literal: str | int | None = None

    def sql(self) -> str:
        if self.op == "null":
            return f"{self.column} IS NULL"
        if self.op == "not_null":
            return f"{self.column} IS NOT NULL"
        if self.op == "non_empty":
            return f"{self.column} != ''"
        lit = self.literal
        text = str(int(lit)) if isinstance(lit, int) else "'" + str(lit).replace("'", "''") + "'"
        return f"{self.column} = {text}"

    def python(self) -> str:
        """The test as a Python expression over a span row tuple named ``row``."""
        cell = f"row[{SPAN_NAMES.index(self.column)}]"
        if self.op == "null":
            return f"{cell} is None"
        if self.op == "not_null":
            return f"{cell} is not None"
        if self.op == "non_empty":
            return f"bool({cell})"
        return f"{cell} == {self.literal!r}"


@dataclass(frozen=True)
class Condition:
    """The spans a column counts: every test holds. ``presence``: where a store cannot tell "no
    span" from a value (ClickHouse's ``minIf`` of none is 0), the name of the count of such spans
    it keeps beside them."""

    name: str
    tests: tuple[Test, ...]
    presence: str | None = None

    def sql(self) -> str:
        return " AND ".join(f"({t.sql()})" if len(self.tests) > 1 else t.sql() for t in self.tests)

    def python(self) -> str:
        return " and ".join(f"({t.python()})" for t in self.tests)


@dataclass(frozen=True)
class Column:
    name: str
    kind: Kind
    value: str | None = None  # the span column (None for a count)
    when: Condition | None = None
    by: str | None = None  # arg_min: the summary column that orders it


ROOT: Final = Condition("root", (Test("parent_span_id", "null"),), presence="roots")
ERROR: Final = Condition("error", (Test("status_code", "eq", 2),))
AGENT_RUN: Final = Condition("agent_run", (Test("operation", "eq", sc.OP_AGENT), Test("agent", "non_empty")))
HAS_SERVICE: Final = Condition("has_service", (Test("service", "not_null"),))
HANDOFF: Final = Condition("handoff", (Test("operation", "eq", sc.OP_HANDOFF),))

# In the order of the lookup tables' columns (after trace_id).
SUMMARY: Final[tuple[Column, ...]] = (
    Column("first_start_ns", "min", "start_ns"),
    Column("last_end_ns", "max", "end_ns"),
    Column("root_name", "arg_min", "name", ROOT, by="root_start_ns"),
    Column("root_start_ns", "min", "start_ns", ROOT),
    Column("first_name", "arg_min", "name", by="first_start_ns"),
    Column("span_count", "count"),
    Column("error_count", "count", when=ERROR),
    Column("agents", "set", "agent", AGENT_RUN),
    Column("services", "set", "service", HAS_SERVICE),
    Column("hops", "count", when=HANDOFF),
)
SUMMARY_NAMES: Final = tuple(c.name for c in SUMMARY)
BY_NAME: Final = {c.name: c for c in SUMMARY}


def _check(columns: Iterable[Column]) -> None:
    for c in columns:
        if (c.value is None) != (c.kind == "count") or (c.value is not None and c.value not in SPAN_NAMES):
            raise ValueError(f"summary column {c.name}: a count takes no span value, the others one")
        if c.kind == "set" and c.when is None:
            raise ValueError(f"summary column {c.name}: a set needs a condition that leaves NULL out")
        if (c.by is not None) != (c.kind == "arg_min"):
            raise ValueError(f"summary column {c.name}: arg_min, and only it, is ordered by a column")
        if c.by is not None:
            by = BY_NAME.get(c.by)
            if by is None or by.kind != "min" or by.when != c.when:
                raise ValueError(f"summary column {c.name}: {c.by} must be a min of the same spans")


_check(SUMMARY)


def by_value(column: Column) -> str:
    """The span column that orders an ``arg_min`` (its ``by`` column's value)."""
    assert column.by is not None
    value = BY_NAME[column.by].value
    assert value is not None
    return value


def compiled() -> tuple[tuple[int, int, int, tuple[tuple[int, int, str | int | None], ...]], ...]:
    """The declaration as the compiled decoder's configure takes it: per column (kind, span column
    position or -1, position of its ``by`` column or -1, ((span column position, test, literal),
    ...)). The decoder folds by this, so a column declared here needs nothing there."""
    return tuple(
        (
            KINDS.index(c.kind),
            -1 if c.value is None else SPAN_NAMES.index(c.value),
            -1 if c.by is None else SUMMARY_NAMES.index(c.by),
            tuple(
                (SPAN_NAMES.index(t.column), OPS.index(t.op), t.literal)
                for t in (() if c.when is None else c.when.tests)
            ),
        )
        for c in SUMMARY
    )


# --- types --------------------------------------------------------------------------------------
_SPAN_TYPES: Final = {name: (sql, arrow) for name, sql, arrow in SPAN_COLUMNS}


def duckdb_type(column: Column) -> str:
    if column.kind == "count":
        return "BIGINT"
    assert column.value is not None
    sql = _SPAN_TYPES[column.value][0]
    return f"{sql}[]" if column.kind == "set" else sql


def arrow_type(column: Column) -> pa.DataType:
    if column.kind == "count":
        return pa.int64()
    assert column.value is not None
    arrow = _SPAN_TYPES[column.value][1]
    return pa.list_(arrow) if column.kind == "set" else arrow


PARTS_ARROW_SCHEMA: Final = pa.schema(
    [("trace_id", pa.string()), *((c.name, arrow_type(c)) for c in SUMMARY)]
)


# --- the Python fold ----------------------------------------------------------------------------
_TID: Final = SPAN_NAMES.index("trace_id")


def new_part() -> list[Any]:
    """A summary of no spans: NULL extremes, zero counts, empty sets."""
    return [0 if c.kind == "count" else set() if c.kind == "set" else None for c in SUMMARY]


def _fold_source() -> str:
    """The fold's Python, written out from the declaration (a loop over the columns that decides
    each one's kind per span costs four times as much): a column's step runs when its condition
    holds; a NULL value counts for nothing, as in SQL; an arg_min is set by the min that orders it."""
    lines = [
        "def fold(parts, row):",
        f"    part = parts.get(row[{_TID}])",
        "    if part is None:",
        f"        part = parts[row[{_TID}]] = new_part()",
    ]
    for slot, c in enumerate(SUMMARY):
        if c.kind == "arg_min":
            continue
        step: list[str]
        if c.kind == "count":
            step = [f"part[{slot}] += 1"]
        else:
            step = [f"v = row[{SPAN_NAMES.index(c.value or '')}]"]
            if c.kind == "set":
                step += ["if v is not None:", f"    part[{slot}].add(v)"]
            else:
                beats = "<" if c.kind == "min" else ">"
                step += [f"if v is not None and (part[{slot}] is None or v {beats} part[{slot}]):"]
                step += [f"    part[{slot}] = v"]
                step += [
                    f"    part[{dep}] = row[{SPAN_NAMES.index(d.value or '')}]"
                    for dep, d in enumerate(SUMMARY)
                    if d.kind == "arg_min" and d.by == c.name
                ]
        if c.when is not None:
            lines.append(f"    if {c.when.python()}:")
            lines += [f"        {line}" for line in step]
        else:
            lines += [f"    {line}" for line in step]
    return "\n".join(lines) + "\n"


def _compile_fold() -> Callable[[dict[str, list[Any]], Sequence[Any]], None]:
    namespace: dict[str, Any] = {"new_part": new_part}
    exec(compile(_fold_source(), f"<{__name__}.fold>", "exec"), namespace)  # our own text, above
    made: Callable[[dict[str, list[Any]], Sequence[Any]], None] = namespace["fold"]
    made.__doc__ = """Fold one span row into its trace's summary in ``parts`` (trace id → values in
    ``SUMMARY`` order; sets as Python sets). Of spans with the same least ``by``, the first folded
    wins."""
    return made


fold: Final = _compile_fold()


def parts_table(parts: dict[str, list[Any]]) -> pa.Table:
    """The summaries as a ``PARTS_ARROW_SCHEMA`` table (sets sorted; lists taken as they are)."""
    sets = [i for i, c in enumerate(SUMMARY) if c.kind == "set"]
    rows = []
    for tid, p in parts.items():
        values = list(p)
        for i in sets:
            values[i] = sorted(values[i])
        rows.append((tid, *values))
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(PARTS_ARROW_SCHEMA)
    arrays = [pa.array(col, type=field.type) for col, field in zip(columns, PARTS_ARROW_SCHEMA, strict=True)]
    return pa.Table.from_arrays(arrays, schema=PARTS_ARROW_SCHEMA)

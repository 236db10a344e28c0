"""The reads the store protocol names, in portable ClickHouse SQL with ``?`` placeholders: a trace's
time range and rows, the trace search, the last heartbeats — and the shaping of their rows into
what DuckDBStore returns for the same spans."""

from __future__ import annotations

from typing import Any, Final

from reach_collector.store import summary
from reach_collector.store.base import TraceFilter
from reach_collector.store.clickhouse.schema import BUCKET_NS, HOUR_NS, TRACE_AGGREGATES, Layout
from reach_collector.store.dialect import CLICKHOUSE
from reach_collector.store.schema import SPAN_NAMES
from reach_collector.store.search import attribute_scans, named, summary_conditions
from reach_collector.store.summary import SUMMARY

__all__ = ["bounds_sql", "search_sql", "span_row", "spans_sql", "summary_row"]

_MERGE: Final = {name: merge for name, _, _, merge in TRACE_AGGREGATES}
# Every state merged per trace (store.summary's columns and their presence counts), in
# TRACE_AGGREGATES order. Aliases unlike the columns: ClickHouse would otherwise read a column name
# in HAVING/ORDER BY as the alias and nest one aggregate in another.
_SUMMARY: Final = ("trace_id", *(f"{merge}({name}) AS m_{name}" for name, _, _, merge in TRACE_AGGREGATES))
_MERGED_NAMES: Final = tuple(name for name, _, _, _ in TRACE_AGGREGATES)


def bounds_sql() -> str:
    """(rows, first start, last end) of one trace in the lookup; params: [trace_id]."""
    return (
        f"SELECT count(), {_MERGE['first_start_ns']}(first_start_ns), {_MERGE['last_end_ns']}(last_end_ns) "
        "FROM traces WHERE trace_id = ?"
    )


def spans_sql() -> str:
    """Every row of one trace by start time; params: [trace_id, first, last, first's minute,
    last's minute]: each of its spans ends between the trace's first start and last end, and
    those minutes select the sort key's leading ranges (and the hours, the partitions)."""
    return (
        f"SELECT {', '.join(SPAN_NAMES)} FROM spans PREWHERE trace_id = ? "
        f"WHERE end_ns >= ? AND end_ns <= ? AND intDiv(end_ns, {BUCKET_NS}) >= ? "
        f"AND intDiv(end_ns, {BUCKET_NS}) <= ? ORDER BY start_ns, span_id"
    )


def spans_params(trace_id: str, first: int, last: int) -> list[Any]:
    return [trace_id, first, last, first // BUCKET_NS, last // BUCKET_NS]


def span_row(row: tuple[Any, ...]) -> dict[str, Any]:
    d = dict(zip(SPAN_NAMES, row, strict=True))
    if d["loop_detected"] is not None:
        d["loop_detected"] = bool(d["loop_detected"])
    return d


def search_sql(f: TraceFilter, layout: Layout) -> tuple[str, list[Any]]:
    """Newest traces matching every filter, as DuckDBStore.search defines them (the filters on
    the merged lookup rows). An attribute filter reads the span table where the trace lives: the
    shard's own table in a cluster (spans and lookup rows are both sharded by trace id)."""
    having, params = summary_conditions(f, CLICKHOUSE, lambda name: f"m_{name}")
    where: list[str] = []
    where_params: list[Any] = []
    # Named with the database: a shard runs the subquery in its own default database. A trace
    # that starts after `since` has no span ending before it.
    for scan, scan_params in attribute_scans(f, CLICKHOUSE, layout.q(layout.local("spans")), "end_ns"):
        where.append(f"trace_id IN ({scan})")
        where_params.extend(scan_params)
    if f.since_ns is not None:
        # A trace that starts since then has every span, so every lookup row, ending in that hour
        # or later: only those traces are merged (all their rows, so an earlier start still rules
        # one out).
        traces = layout.q(layout.local("traces"))
        where.append(f"trace_id IN (SELECT trace_id FROM {traces} WHERE end_hour >= ?)")
        where_params.append(f.since_ns // HOUR_NS)
    where_sql = f" WHERE {' AND '.join(where)}" if where else ""
    having_sql = f" HAVING {' AND '.join(having)}" if having else ""
    sql = (
        f"SELECT {', '.join(_SUMMARY)} FROM traces{where_sql} GROUP BY trace_id{having_sql} "
        "ORDER BY m_first_start_ns DESC, trace_id LIMIT ?"
    )
    return sql, [*where_params, *params, f.limit]


def summary_row(row: tuple[Any, ...]) -> dict[str, Any]:
    """One search row in DuckDBStore.search's shape (trace_id, then store.summary's columns): a
    column no span counted for (its condition's presence count is 0) is None, as on DuckDB."""
    tid, *values = row
    merged = dict(zip(_MERGED_NAMES, values, strict=True))
    d: dict[str, Any] = {"trace_id": tid}
    for c in SUMMARY:
        value = merged[c.name]
        if c.when is not None and c.when.presence is not None and not int(merged[c.when.presence]):
            value = None
        elif c.kind == "set":
            value = list(value)
        elif summary.duckdb_type(c) == "BIGINT":
            value = int(value)
        d[c.name] = value
    return named(d)

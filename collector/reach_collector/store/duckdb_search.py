"""The trace search on DuckDB (TraceStore.search): its SQL, over the summary's lookup tables.

Candidates are the newest `traces` rows that match every filter plus every trace with parts not
yet compacted; the filters are checked again on the merged rows (store.schema.merged, from the
summary's declaration), since a part may change a trace's summary either way.
"""

from __future__ import annotations

from typing import Any

from reach_collector.store.base import TraceFilter
from reach_collector.store.dialect import DUCKDB
from reach_collector.store.schema import MERGED, TRACE_COLUMNS, merged

__all__ = ["search_sql", "summary_rows"]


def search_sql(f: TraceFilter) -> tuple[str, list[Any]]:
    """The search's SQL and its parameters (every value bound)."""
    row_where: list[str] = []
    row_params: list[Any] = []
    having: list[str] = []
    having_params: list[Any] = []

    def both(row_sql: str, merged_sql: str, *values: Any) -> None:
        row_where.append(row_sql)
        row_params.extend(values)
        having.append(merged_sql)
        having_params.extend(values)

    if f.service is not None:
        both("list_contains(services, ?)", f"list_contains({merged('services')}, ?)", f.service)
    if f.agent is not None:
        both("list_contains(agents, ?)", f"list_contains({merged('agents')}, ?)", f.agent)
    if f.errors_only:
        both("error_count > 0", f"{merged('error_count')} > 0")
    first, last = merged("first_start_ns"), merged("last_end_ns")
    if f.since_ns is not None:
        both("first_start_ns >= ?", f"{first} >= ?", f.since_ns)
    if f.until_ns is not None:
        both("first_start_ns <= ?", f"{first} <= ?", f.until_ns)
    if f.min_duration_ms is not None:
        both("(last_end_ns - first_start_ns) >= ?", f"({last} - {first}) >= ?", int(f.min_duration_ms * 1e6))
    # Each attribute filter is one span scan, materialised once and used in both places.
    ctes: list[str] = []
    cte_params: list[Any] = []
    for i, (key, value) in enumerate(f.attributes):
        attr, attr_params = DUCKDB.attr("attributes", key)
        span_where = [f"{attr} = ?"]
        cte_params.extend([*attr_params, value])
        if f.since_ns is not None:
            span_where.append("start_ns >= ?")
            cte_params.append(f.since_ns)
        where = " AND ".join(span_where)
        ctes.append(f"attr{i} AS MATERIALIZED (SELECT DISTINCT trace_id FROM spans WHERE {where})")
        member = f"trace_id IN (SELECT trace_id FROM attr{i})"
        both(member, member)
    row_filter = (" WHERE " + " AND ".join(row_where)) if row_where else ""
    having_sql = (" HAVING " + " AND ".join(having)) if having else ""
    sql = (
        "WITH " + "".join(c + ", " for c in ctes) + f"top AS (SELECT trace_id FROM traces{row_filter} "
        "ORDER BY first_start_ns DESC, trace_id LIMIT ?), "
        "cand AS (SELECT trace_id FROM top UNION SELECT trace_id FROM trace_parts), "
        f"merged AS (SELECT {', '.join(TRACE_COLUMNS)} FROM traces SEMI JOIN cand USING (trace_id) "
        "UNION ALL SELECT * FROM trace_parts) "
        f"SELECT {MERGED} FROM merged GROUP BY trace_id{having_sql} "
        "ORDER BY first_start_ns DESC, trace_id LIMIT ?"
    )
    return sql, [*cte_params, *row_params, f.limit, *having_params, f.limit]


def summary_rows(rows: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """The search's rows as dicts (store.schema.TRACE_COLUMNS); a trace without a root is named
    by its first span."""
    out = []
    for row in rows:
        d = dict(zip(TRACE_COLUMNS, row, strict=True))
        d["root_name"] = d["root_name"] if d["root_name"] is not None else d["first_name"]
        out.append(d)
    return out

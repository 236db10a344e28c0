"""The trace search on DuckDB (TraceStore.search): its SQL, over the summary's lookup tables.

Candidates are the newest `traces` rows that match every filter plus every trace with parts not
yet compacted; the filters (store.search) are checked again on the merged rows (store.schema.merged,
from the summary's declaration), since a part may change a trace's summary either way.
"""

from __future__ import annotations

from typing import Any

from reach_collector.store.base import TraceFilter
from reach_collector.store.dialect import DUCKDB
from reach_collector.store.schema import MERGED, TRACE_COLUMNS, merged
from reach_collector.store.search import attribute_scans, named, summary_conditions

__all__ = ["search_sql", "summary_rows"]


def search_sql(f: TraceFilter) -> tuple[str, list[Any]]:
    """The search's SQL and its parameters (every value bound)."""
    row_where, row_params = summary_conditions(f, DUCKDB, lambda name: name)
    having, having_params = summary_conditions(f, DUCKDB, merged)
    # Each attribute filter is one span scan, materialised once and used in both places.
    ctes: list[str] = []
    cte_params: list[Any] = []
    for i, (scan, params) in enumerate(attribute_scans(f, DUCKDB, "spans", "start_ns")):
        ctes.append(f"attr{i} AS MATERIALIZED ({scan})")
        cte_params.extend(params)
        member = f"trace_id IN (SELECT trace_id FROM attr{i})"
        row_where.append(member)
        having.append(member)
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
    return [named(dict(zip(TRACE_COLUMNS, row, strict=True))) for row in rows]

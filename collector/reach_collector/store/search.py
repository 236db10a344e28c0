"""The trace search's filters (TraceFilter, §11), defined once for every store.

Each filter but the attribute ones is a condition on a trace's summary (store.summary): a store
names its summary columns (``column``: the merged value, or a lookup row's own) and the dialect
spells the rest. An attribute filter is a span scan, the trace ids of the spans that carry the
attribute; a trace found since ``since_ns`` has every span starting (so ending) after it, which
bounds the scan by ``bound``, a time column of the span table.

What stays each store's own is where the candidates come from, which follows how it keeps the
summaries: DuckDB merges compacted rows with parts not yet compacted (the newest matching rows
first), ClickHouse merges aggregate states (pruned by the hour of the spans' end).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reach_collector.store.base import TraceFilter
from reach_collector.store.dialect import Dialect

__all__ = ["attribute_scans", "named", "summary_conditions"]


def summary_conditions(
    f: TraceFilter, dialect: Dialect, column: Callable[[str], str]
) -> tuple[list[str], list[Any]]:
    """The filters on the summary, each an SQL condition, and their parameters in order."""
    conds: list[str] = []
    params: list[Any] = []
    if f.service is not None:
        conds.append(dialect.list_has(column("services")))
        params.append(f.service)
    if f.agent is not None:
        conds.append(dialect.list_has(column("agents")))
        params.append(f.agent)
    if f.errors_only:
        conds.append(f"{column('error_count')} > 0")
    first = column("first_start_ns")
    if f.since_ns is not None:
        conds.append(f"{first} >= ?")
        params.append(f.since_ns)
    if f.until_ns is not None:
        conds.append(f"{first} <= ?")
        params.append(f.until_ns)
    if f.min_duration_ms is not None:
        conds.append(f"({column('last_end_ns')} - {first}) >= ?")
        params.append(int(f.min_duration_ms * 1e6))
    return conds, params


def attribute_scans(f: TraceFilter, dialect: Dialect, spans: str, bound: str) -> list[tuple[str, list[Any]]]:
    """One query per attribute filter: the ids of the traces in ``spans`` with a span carrying it."""
    out = []
    for key, value in f.attributes:
        attr, attr_params = dialect.attr("attributes", key)
        cond, params = f"{attr} = ?", [*attr_params, value]
        if f.since_ns is not None:
            cond += f" AND {bound} >= ?"
            params.append(f.since_ns)
        out.append((f"SELECT DISTINCT trace_id FROM {spans} WHERE {cond}", params))
    return out


def named(summary: dict[str, Any]) -> dict[str, Any]:
    """A search row as every store answers it: a trace without a root span is named by its first."""
    if summary["root_name"] is None:
        summary["root_name"] = summary["first_name"]
    return summary

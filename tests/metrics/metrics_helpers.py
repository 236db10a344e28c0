"""Helpers for the metrics tests: synthetic span rows as Arrow tables, written through the store's
own write path (span rows plus their trace lookup parts, in one transaction)."""

from __future__ import annotations

import inspect
import itertools
import json
from dataclasses import dataclass
from typing import Any

import duckdb
import httpx
import pyarrow as pa

from reach_collector.exposition.registry import Exposition
from reach_collector.store import schema
from reach_collector.store.duckdb_store import DuckDBStore
from reach_otel import semconv as sc

NOW_NS = 1_800_000_000 * 1_000_000_000  # a fixed "now" for every query (a fake clock)
_ids = itertools.count(1)


class Clock:
    """A fake clock at ``NOW_NS``, moved by hand (``clock.now += seconds``)."""

    def __init__(self) -> None:
        self.now = NOW_NS / 1e9

    def __call__(self) -> float:
        return self.now


def new_trace_id() -> str:
    return f"{next(_ids):032x}"


def new_span_id() -> str:
    return f"{next(_ids):016x}"


def span(
    trace_id: str,
    *,
    operation: str | None,
    end_ns: int,
    duration_ms: float = 10.0,
    error: bool = False,
    parent: str | None = None,
    span_id: str | None = None,
    name: str | None = None,
    attributes: dict[str, Any] | None = None,
    **columns: Any,
) -> dict[str, Any]:
    """One span row (store.schema columns). ``duration_ms`` is exact: start = end − duration."""
    start = end_ns - round(duration_ms * 1_000_000)
    attrs = dict(attributes or {})
    if operation is not None:
        attrs[sc.GEN_AI_OPERATION_NAME] = operation
    row: dict[str, Any] = dict.fromkeys(schema.SPAN_NAMES)
    row.update(
        trace_id=trace_id,
        span_id=span_id or new_span_id(),
        parent_span_id=parent,
        name=name or f"{operation or 'span'}",
        kind=1,
        start_ns=start,
        end_ns=end_ns,
        duration_ms=(end_ns - start) / 1e6,
        status_code=2 if error else 0,
        status_message="boom" if error else "",
        operation=operation,
        flags=1,
        attributes=json.dumps(attrs),
        resource=json.dumps({sc.SERVICE_NAME: columns.get("service")}),
    )
    row.update(columns)
    return row


def table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schema.ARROW_SCHEMA)


def _parts(batch: pa.Table) -> pa.Table:
    """The batch's trace lookup parts, computed with the schema's own per-trace aggregate."""
    con = duckdb.connect()
    for statement in schema.DDL:
        con.execute(statement)
    con.register("reach_batch", batch)
    con.execute(schema.PART_INSERT.format(batch="reach_batch"))
    parts = con.sql("SELECT * FROM trace_parts").to_arrow_table()
    con.close()
    target = getattr(schema, "PARTS_ARROW_SCHEMA", None)
    return parts.cast(target) if target is not None else parts


def write(store: DuckDBStore, rows: list[dict[str, Any]] | pa.Table) -> None:
    """Write through ``store.write`` (span rows, and the lookup parts when the store takes them)."""
    batch = rows if isinstance(rows, pa.Table) else table(rows)
    if len(inspect.signature(store.write).parameters) >= 2:
        store.write(batch, _parts(batch))  # type: ignore[call-arg]
    else:
        store.write(batch)


@dataclass
class Served:
    """A running collector with the metrics routers mounted (see conftest.served)."""

    url: str
    store: DuckDBStore
    exposition: Exposition

    def get(self, path: str, **params: str) -> httpx.Response:
        return httpx.get(self.url + path, params=params, timeout=10)

"""The store interface the rest of the collector depends on (DuckDBStore implements it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import pyarrow as pa

from reach_collector.alerting.data import Heartbeat
from reach_collector.store.duckdb_store import TraceFilter


class TraceStore(Protocol):
    dialect: str  # "duckdb" or "clickhouse": which SQL ``query`` takes
    # An SQL source of (trace_id, first_start_ns, last_end_ns) rows, one or more per trace: a
    # trace's time range is the min and max over its rows.
    trace_bounds: str

    # writing: called from the writer thread only
    def write(self, table: pa.Table, parts: pa.Table) -> None: ...

    def maintain(self, idle: bool) -> None: ...

    def delete_older_than(self, cutoff_ns: int) -> int: ...

    def append(self, table: str, rows: Sequence[Sequence[Any]]) -> None: ...

    # reading: any thread
    def ping(self) -> bool: ...

    # One trace's rows (store.schema columns) in start order, None when unknown. A store that reads
    # columns returns span_rows.SpanRows (the trace view then encodes whole columns); list[dict] works.
    def trace_spans(self, trace_id: str) -> Sequence[Mapping[str, Any]] | None: ...

    def search(self, f: TraceFilter) -> list[dict[str, Any]]: ...

    def last_api_heartbeats(self, now_ns: int, lookback_s: float) -> dict[str, Heartbeat]: ...

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    def close(self) -> None: ...

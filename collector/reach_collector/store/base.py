"""The store's contract, which the rest of the collector depends on: ``TraceStore`` (DuckDBStore and
ClickHouseStore implement it; a third backend or a test fake implements only it) and the types its
answers use."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import pyarrow as pa

__all__ = ["Heartbeat", "TraceFilter", "TraceStore", "WriteProfile"]


@dataclass(frozen=True)
class TraceFilter:
    """Search filters (§11). Times are unix nanoseconds; every value is bound as a parameter."""

    service: str | None = None
    agent: str | None = None
    errors_only: bool = False
    since_ns: int | None = None
    until_ns: int | None = None
    min_duration_ms: float | None = None
    attributes: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    limit: int = 20


class Heartbeat(NamedTuple):
    """An agent's last heartbeat at or before ``now`` (unix seconds); ``stopped`` when that last
    one was the deregistration of a clean exit (``status: "stopped"``), so silence is expected."""

    last_seen: float
    service: str | None = None
    stopped: bool = False


@dataclass(frozen=True)
class WriteProfile:
    """How a store takes commits, declared by the store and read by the ingest writer.

    ``concurrent_writes``: commits it takes at once, each from its own thread (1: the one writer
    thread). ``commit_spans``: a commit's worth of rows; while one commit runs, another starts only
    once that many wait. ``group_commit_s``: a commit of less than a commit's worth waits up to this
    long for the requests of exporters just acknowledged (a store whose every commit has a fixed
    cost); 0 never waits. ``computes_summary``: the store computes each trace's summary
    (store.summary) from the span rows itself, so the decoder builds no parts for it (``write``
    gets an empty parts table)."""

    concurrent_writes: int = 1
    commit_spans: int = 4096
    group_commit_s: float = 0.0
    computes_summary: bool = False


class TraceStore(Protocol):
    dialect: str  # "duckdb" or "clickhouse": which SQL ``query`` takes
    write_profile: WriteProfile  # how it takes commits (ingest.writer)
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

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    def describe(self) -> str: ...  # where the data lives, for the startup line (never a password)

    def memory_bytes(self) -> int | None: ...  # what an embedded store holds in memory; None: a server

    def close(self) -> None: ...

"""The DuckDB trace store: owns every SQL statement; parameters are always bound, never formatted.

One connection writes (the ingest writer's thread); readers get their own cursor per thread, so
queries see committed data without blocking ingest.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import duckdb
import pyarrow as pa
from reach_collector.store.schema import DDL, SPAN_NAMES, TRACE_UPSERT

MEMORY: Final = ":memory:"
_TRACE_COLUMNS: Final = (
    "trace_id",
    "root_name",
    "first_start_ns",
    "last_end_ns",
    "span_count",
    "error_count",
    "agents",
    "hops",
)


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


class DuckDBStore:
    """Spans and the trace lookup table in one DuckDB database (a file, or ``:memory:``)."""

    def __init__(self, path: str | os.PathLike[str] = MEMORY, *, checkpoint_bytes: int = 64 << 20) -> None:
        self.path = str(path)
        if self.path != MEMORY:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._con = duckdb.connect(self.path)
        # We checkpoint ourselves, between commits, so no request waits behind a checkpoint.
        self._con.execute("SET checkpoint_threshold = '16GB'")
        for statement in DDL:
            self._con.execute(statement)
        self._checkpoint_bytes = checkpoint_bytes
        self._local = threading.local()
        self._cursors: list[duckdb.DuckDBPyConnection] = []
        self._cursors_lock = threading.Lock()
        self._closed = False

    # --- writing (the writer thread only) -------------------------------------------------------
    def write(self, table: pa.Table) -> None:
        """Insert one Arrow batch of span rows and update the lookup table, in one transaction."""
        con = self._con
        con.register("reach_batch", table)
        try:
            con.execute("BEGIN TRANSACTION")
            try:
                con.execute("INSERT INTO spans SELECT * FROM reach_batch")
                con.execute(TRACE_UPSERT.format(batch="reach_batch"))
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        finally:
            con.unregister("reach_batch")

    def maybe_checkpoint(self) -> bool:
        """Checkpoint when the WAL has grown past the threshold; called by the writer when idle."""
        if self.path == MEMORY:
            return False
        try:
            size = os.path.getsize(self.path + ".wal")
        except OSError:
            return False
        if size < self._checkpoint_bytes:
            return False
        self._con.execute("CHECKPOINT")
        return True

    def delete_older_than(self, cutoff_ns: int) -> int:
        """Retention: drop spans that ended before ``cutoff_ns`` and traces that no longer have any."""
        con = self._con
        con.execute("BEGIN TRANSACTION")
        try:
            row = con.execute("DELETE FROM spans WHERE end_ns < ?", [cutoff_ns]).fetchone()
            con.execute("DELETE FROM traces WHERE last_end_ns < ?", [cutoff_ns])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        return int(row[0]) if row else 0

    # --- reading (any thread) -------------------------------------------------------------------
    def _cursor(self) -> duckdb.DuckDBPyConnection:
        cur: duckdb.DuckDBPyConnection | None = getattr(self._local, "cursor", None)
        if cur is None:
            cur = self._con.cursor()
            self._local.cursor = cur
            with self._cursors_lock:
                self._cursors.append(cur)
        return cur

    def ping(self) -> bool:
        return not self._closed and self._cursor().execute("SELECT 1").fetchone() == (1,)

    def trace_spans(self, trace_id: str) -> list[dict[str, Any]] | None:
        """Every stored row of one trace, ordered by start time; None when the trace is unknown."""
        cur = self._cursor()
        bounds = cur.execute(
            "SELECT first_start_ns, last_end_ns FROM traces WHERE trace_id = ?", [trace_id]
        ).fetchone()
        if bounds is None:
            return None
        # The time bounds let DuckDB skip every row group outside the trace (zone maps).
        cur.execute(
            f"SELECT {', '.join(SPAN_NAMES)} FROM spans "
            "WHERE trace_id = ? AND start_ns BETWEEN ? AND ? ORDER BY start_ns, span_id",
            [trace_id, bounds[0], bounds[1]],
        )
        return [dict(zip(SPAN_NAMES, row, strict=True)) for row in cur.fetchall()]

    def search(self, f: TraceFilter) -> list[dict[str, Any]]:
        where: list[str] = []
        params: list[Any] = []
        if f.service is not None:
            where.append("list_contains(services, ?)")
            params.append(f.service)
        if f.agent is not None:
            where.append("list_contains(agents, ?)")
            params.append(f.agent)
        if f.errors_only:
            where.append("error_count > 0")
        if f.since_ns is not None:
            where.append("first_start_ns >= ?")
            params.append(f.since_ns)
        if f.until_ns is not None:
            where.append("first_start_ns <= ?")
            params.append(f.until_ns)
        if f.min_duration_ms is not None:
            where.append("(last_end_ns - first_start_ns) >= ?")
            params.append(int(f.min_duration_ms * 1e6))
        for key, value in f.attributes:
            span_where = ["json_extract_string(attributes, ?) = ?"]
            span_params: list[Any] = [_json_path(key), value]
            if f.since_ns is not None:
                span_where.append("start_ns >= ?")
                span_params.append(f.since_ns)
            where.append(f"trace_id IN (SELECT trace_id FROM spans WHERE {' AND '.join(span_where)})")
            params.extend(span_params)
        sql = (
            "SELECT trace_id, coalesce(root_name, first_name), first_start_ns, last_end_ns, "
            "span_count, error_count, agents, hops FROM traces"
        )
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY first_start_ns DESC, trace_id LIMIT ?"
        params.append(f.limit)
        rows = self._cursor().execute(sql, params).fetchall()
        return [dict(zip(_TRACE_COLUMNS, row, strict=True)) for row in rows]

    def count_spans(self) -> int:
        row = self._cursor().execute("SELECT count(*) FROM spans").fetchone()
        return int(row[0]) if row else 0

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Read-only helper for other collector modules (metrics); callers bind every value."""
        return self._cursor().execute(sql, list(params)).fetchall()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with self._cursors_lock:
            for cur in self._cursors:
                with contextlib.suppress(duckdb.Error):
                    cur.close()
            self._cursors.clear()
        if self.path != MEMORY:
            with contextlib.suppress(duckdb.Error):
                self._con.execute("CHECKPOINT")
        self._con.close()


def _json_path(key: str) -> str:
    """A JSON path selecting one top-level key verbatim (attribute keys contain dots)."""
    return '$."' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'

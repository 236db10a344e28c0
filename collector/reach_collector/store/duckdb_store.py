"""The DuckDB trace store: owns every SQL statement; parameters are always bound, never formatted.

One connection writes (the ingest writer's thread); readers get their own cursor per thread, so
queries see committed data without blocking ingest.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import duckdb
import pyarrow as pa

from reach_collector.store import span_rows
from reach_collector.store.base import TraceFilter, WriteProfile
from reach_collector.store.dialect import json_path as _json_path  # noqa: F401 (read from here too)
from reach_collector.store.duckdb_search import search_sql, summary_rows
from reach_collector.store.schema import (
    ADD_TRACE_KEY,
    AUX_COLUMNS,
    COMPACT,
    DDL,
    PRUNE_ALERT_HISTORY,
    SPAN_NAMES,
    TRACE_KEY_OF,
)
from reach_collector.store.span_rows import SpanRows

MEMORY: Final = ":memory:"
# DuckDB's row group (rows). Checkpoints taken at a fixed WAL size (64 MB: a third of a row group
# of realistic spans) cost twice the work per span of checkpoints taken each time a row group's
# worth of spans has come (measured), which is what the store does under load.
ROW_GROUP_ROWS: Final = 122_880


def _out_of_memory(exc: BaseException) -> bool:
    """DuckDB ran out of memory (its buffer pool is capped by ``memory_limit``). A COMMIT that
    fails so raises a TransactionException that only its message tells apart."""
    if isinstance(exc, duckdb.OutOfMemoryException):
        return True
    text = str(exc).lower()
    return isinstance(exc, duckdb.Error) and ("out of memory" in text or "failed to pin block" in text)


_BATCH_ROWS: Final = 16  # side-table rows from which an append goes in as one columnar batch


class DuckDBStore:
    """Spans and the trace lookup table in one DuckDB database (a file, or ``:memory:``)."""

    dialect = "duckdb"  # the SQL the query modules speak to it (reach_collector.store.dialect)
    write_profile = WriteProfile()  # one writer thread: DuckDB takes one commit at a time
    trace_bounds = (
        "(SELECT trace_id, first_start_ns, last_end_ns FROM traces"
        " UNION ALL SELECT trace_id, first_start_ns, last_end_ns FROM trace_parts)"
    )

    def __init__(
        self,
        path: str | os.PathLike[str] = MEMORY,
        *,
        checkpoint_bytes: int = 64 << 20,
        max_wal_bytes: int = 512 << 20,
        compact_rows: int = 50_000,
        memory_limit: str | None = None,
        threads: int | None = None,
    ) -> None:
        """``memory_limit`` (a DuckDB size such as ``512MB``, or a percentage of RAM) caps DuckDB's
        buffer pool, which otherwise keeps pages cached up to 80 % of RAM; ``threads`` sets its
        worker threads. None leaves DuckDB's default.

        Checkpoints (``maintain``): under load, each time the span table's last row group has
        filled (≈ 100–200 MB of WAL for realistic spans); whenever the WAL passes
        ``max_wal_bytes``, which bounds the replay after a crash (≈ 0.8 s per 200 MB here); and,
        when ingest is idle, once the WAL passes ``checkpoint_bytes``."""
        self.path = str(path)
        if self.path != MEMORY:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._con = duckdb.connect(self.path)
        self._spill: str | None = None
        try:
            if memory_limit is not None:
                self._con.execute("SET memory_limit = ?", [memory_limit])
                if self.path == MEMORY:  # past the limit DuckDB spills; not into the working dir
                    self._spill = tempfile.mkdtemp(prefix="reach-duckdb-")
                    self._con.execute("SET temp_directory = ?", [self._spill])
            if threads is not None:
                self._con.execute("SET threads = ?", [int(threads)])
        except BaseException:
            self._con.close()
            self._remove_spill()
            raise
        # We checkpoint ourselves, between commits, so no request waits behind a checkpoint.
        self._con.execute("SET checkpoint_threshold = '16GB'")
        for statement in DDL:
            self._con.execute(statement)
        self._add_trace_key()
        self._checkpoint_bytes = checkpoint_bytes
        self._max_wal_bytes = max_wal_bytes
        self._compact_rows = compact_rows
        self.checkpoint_seconds = 0.0  # spent in checkpoints since open (the writer's timings)
        self.checkpoints = 0
        self._checkpointing = False
        # fetchall, never fetchone: DuckDB keeps a half-read result open and refuses the next statement.
        self._parts_rows = int(self._con.execute("SELECT count(*) FROM trace_parts").fetchall()[0][0])
        self._last_compaction = time.monotonic()
        # Span rows appended since the last checkpoint. After a checkpoint DuckDB starts a new row
        # group for the rows that follow, so checkpointing each time ROW_GROUP_ROWS more have come
        # writes full row groups, each once.
        self._since_checkpoint = 0
        self._since_checkpoint_bytes = 0
        self._local = threading.local()
        self._cursors: list[duckdb.DuckDBPyConnection] = []
        self._cursors_lock = threading.Lock()
        self._closed = False

    def _add_trace_key(self) -> None:
        has = self._con.execute(
            "SELECT count(*) FROM duckdb_columns() WHERE database_name = current_database() "
            "AND schema_name = current_schema() AND table_name = 'traces' AND column_name = 'trace_key'"
        ).fetchall()
        if has[0][0]:
            return
        self._con.execute("BEGIN TRANSACTION")
        try:
            for statement in ADD_TRACE_KEY:
                self._con.execute(statement)
            self._con.execute("COMMIT")
        except BaseException:
            self._con.execute("ROLLBACK")
            raise

    # --- writing (the writer thread only) -------------------------------------------------------
    def write(self, table: pa.Table, parts: pa.Table) -> None:
        """Append span rows and their trace parts (store.schema) in one transaction."""
        con = self._con
        # Read by DuckDB's replacement scan (this frame's locals): cheaper than register/unregister.
        reach_batch, reach_parts = table, parts  # noqa: F841
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute("INSERT INTO spans SELECT * FROM reach_batch")
            con.execute("INSERT INTO trace_parts SELECT * FROM reach_parts")
            con.execute("COMMIT")
        except BaseException as exc:
            # A failed COMMIT has already ended the transaction: its ROLLBACK fails, and must not
            # hide why the write failed.
            with contextlib.suppress(duckdb.TransactionException):
                con.execute("ROLLBACK")
            if _out_of_memory(exc):
                raise MemoryError(f"the store could not hold {table.num_rows} span rows: {exc}") from exc
            raise
        self._parts_rows += parts.num_rows
        self._since_checkpoint += table.num_rows
        self._since_checkpoint_bytes += table.nbytes

    def maintain(self, idle: bool) -> None:
        """Between commits, and in pauses of ingest (``idle``), on the writer thread: fold trace
        parts into `traces` when there are many, or when idle; then checkpoint when one is due
        (``checkpoint_due``)."""
        if self._parts_rows >= self._compact_rows or (idle and self._parts_rows > 0):
            self.compact()
        if self.checkpoint_due(idle):
            self.checkpoint()

    def _wal_bytes(self) -> int:
        if self.path == MEMORY:
            return 0
        try:
            return os.path.getsize(self.path + ".wal")
        except OSError:
            return 0

    def checkpoint_due(self, idle: bool) -> bool:
        """A row group's worth of spans has come since the last checkpoint, or the WAL is past the
        recovery bound, or (idle) past ``checkpoint_bytes``."""
        if self.path == MEMORY:
            return False
        if self._since_checkpoint >= ROW_GROUP_ROWS:
            return True
        # Under load the WAL's size is read only once the Arrow bytes appended since the last
        # checkpoint (about what the WAL holds) near the bound: a stat per commit costs the writer.
        if not idle and self._since_checkpoint_bytes < self._max_wal_bytes // 2:
            return False
        wal = self._wal_bytes()
        return wal > 0 and (wal >= self._max_wal_bytes or (idle and wal >= self._checkpoint_bytes))

    def checkpoint(self) -> None:
        started = time.perf_counter()
        self._checkpointing = True  # trace_spans reads `traces` by trace_key meanwhile
        try:
            self._con.execute("CHECKPOINT")
        finally:
            self._checkpointing = False
        self.checkpoint_seconds += time.perf_counter() - started
        self.checkpoints += 1
        self._since_checkpoint = 0
        self._since_checkpoint_bytes = 0

    def compact(self) -> None:
        con = self._con
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(COMPACT)
            con.execute("DELETE FROM trace_parts")
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        self._parts_rows = 0
        self._last_compaction = time.monotonic()

    def delete_older_than(self, cutoff_ns: int) -> int:
        """Retention: drop spans that ended before ``cutoff_ns``, traces that no longer have any, and
        older heartbeats, evaluations and alert history (but not the episodes still pending or firing)."""
        con = self._con
        con.execute("BEGIN TRANSACTION")
        try:
            deleted = con.execute("DELETE FROM spans WHERE end_ns < ?", [cutoff_ns]).fetchall()
            con.execute("DELETE FROM traces WHERE last_end_ns < ?", [cutoff_ns])
            con.execute("DELETE FROM trace_parts WHERE last_end_ns < ?", [cutoff_ns])
            con.execute("DELETE FROM heartbeats WHERE time_ns < ?", [cutoff_ns])
            con.execute("DELETE FROM evaluations WHERE time_ns < ?", [cutoff_ns])
            for statement in PRUNE_ALERT_HISTORY:
                con.execute(statement, [cutoff_ns])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        return int(deleted[0][0]) if deleted else 0

    def append(self, table: str, rows: Sequence[Sequence[Any]]) -> None:
        """Append rows to one of the side tables (heartbeats, alert history, evaluations), in one
        transaction; columns in ``schema.AUX_TABLES`` order. A few rows are bound as parameters;
        more go in as one columnar batch (an evaluations request holds hundreds: row by row, DuckDB
        would take them at a thousand a second)."""
        columns = AUX_COLUMNS.get(table)
        if columns is None:
            raise ValueError(f"unknown side table {table!r}")
        if not rows:
            return
        con = self._con
        names = ", ".join(columns)
        con.execute("BEGIN TRANSACTION")
        try:
            if len(rows) < _BATCH_ROWS:
                marks = ", ".join("?" * len(columns))
                con.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", list(rows))
            else:
                by_column = zip(*rows, strict=True)
                batch = pa.table({name: list(v) for name, v in zip(columns, by_column, strict=True)})
                con.register("appended_rows", batch)
                try:
                    con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM appended_rows")
                finally:
                    con.unregister("appended_rows")
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise

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
        return not self._closed and self._cursor().execute("SELECT 1").fetchall() == [(1,)]

    def trace_spans(self, trace_id: str) -> list[dict[str, Any]] | SpanRows | None:
        """Every stored row of one trace, ordered by start time; None when the trace is unknown.
        A large trace (span_rows.COLUMNS_FROM) is read as Arrow columns, rows on demand."""
        cur = self._cursor()
        bounds: tuple[int | None, int | None] = (None, None)
        count: int | None = None  # spans, as the lookup counts them; unknown when found by key
        if self._checkpointing:
            bounds = self._bounds_by_key(cur, trace_id)
        if bounds[0] is None:  # (not found by key: look it up by id, as outside checkpoints)
            first, last, count = cur.execute(
                "SELECT min(f), max(l), sum(n) FROM (SELECT first_start_ns AS f, last_end_ns AS l,"
                " span_count AS n FROM traces WHERE trace_id = ? UNION ALL"
                " SELECT first_start_ns, last_end_ns, span_count FROM trace_parts WHERE trace_id = ?)",
                [trace_id, trace_id],
            ).fetchall()[0]
            bounds = (first, last)
        if bounds[0] is None:
            return None
        # The time bounds let DuckDB skip every row group outside the trace (zone maps).
        sql = (
            f"SELECT {', '.join(SPAN_NAMES)} FROM spans "
            "WHERE trace_id = ? AND start_ns BETWEEN ? AND ? ORDER BY start_ns, span_id"
        )
        params = [trace_id, bounds[0], bounds[1]]
        if count is not None and count < span_rows.COLUMNS_FROM:
            cur.execute(sql, params)
            return [dict(zip(SPAN_NAMES, row, strict=True)) for row in cur.fetchall()]
        # Columns: for 10 000 spans fetchall's tuples and the dicts cost ~4x the Arrow read.
        return SpanRows(cur.sql(sql, params=params).to_arrow_table())

    @staticmethod
    def _bounds_by_key(cur: duckdb.DuckDBPyConnection, trace_id: str) -> tuple[int | None, int | None]:
        """A trace's time range without filtering `traces` on its primary key (schema.TRACE_KEY):
        a scan of the unindexed trace_key, the ids compared here."""
        rows = cur.execute(
            f"SELECT trace_id, first_start_ns, last_end_ns FROM traces WHERE trace_key = {TRACE_KEY_OF}"
            " UNION ALL SELECT trace_id, first_start_ns, last_end_ns FROM trace_parts WHERE trace_id = ?",
            [trace_id, trace_id],
        ).fetchall()
        found = [(f, last) for tid, f, last in rows if tid == trace_id]
        if not found:
            return None, None
        return min(f for f, _ in found), max(last for _, last in found)

    def search(self, f: TraceFilter) -> list[dict[str, Any]]:
        """Newest traces matching every filter (duckdb_search)."""
        sql, params = search_sql(f)
        return summary_rows(self._cursor().execute(sql, params).fetchall())

    def memory_bytes(self) -> int:
        """Bytes DuckDB holds in memory now (its buffer pool and allocations, every tag summed)."""
        rows = self._cursor().execute("SELECT sum(memory_usage_bytes) FROM duckdb_memory()").fetchall()
        return int(rows[0][0] or 0)

    def count_spans(self) -> int:
        return int(self._cursor().execute("SELECT count(*) FROM spans").fetchall()[0][0])

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Read-only helper for other collector modules (metrics); callers bind every value."""
        return self._cursor().execute(sql, list(params)).fetchall()

    def describe(self) -> str:
        """Where the data lives, for the startup line."""
        if self.path == MEMORY:
            return "in memory (nothing is kept after exit)"
        return str(Path(self.path).resolve())

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
                if self._parts_rows:
                    self.compact()
                self._con.execute("CHECKPOINT")
        self._con.close()
        self._remove_spill()

    def _remove_spill(self) -> None:
        if self._spill is not None:
            shutil.rmtree(self._spill, ignore_errors=True)
            self._spill = None

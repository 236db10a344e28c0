"""The writer: the thread that group-commits queued span batches into the store — or, for a store
whose write profile takes several commits at once (``concurrent_writes``, ClickHouse), that many
threads.

Requests hand over an Arrow table and wait on a future that resolves only after the transaction
holding their rows has committed (so an acknowledgement means durable). The queue is bounded in
spans; when it is full ``submit`` raises ``QueueFull`` and the caller answers 429/RESOURCE_EXHAUSTED.
A DuckDB store's profile takes one commit at a time: exactly one writer thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

from reach_collector.store.base import WriteProfile

log = logging.getLogger(__name__)


class SpanSink(Protocol):
    """What the writer needs from a store: ``write`` and ``maintain``, and how it takes commits
    (``write_profile``): with ``concurrent_writes`` over 1, ``write`` is called from several
    threads at a time, and ``call`` tasks may run beside a commit."""

    write_profile: WriteProfile

    def write(self, table: pa.Table, parts: pa.Table) -> None: ...

    def maintain(self, idle: bool) -> None: ...


class QueueFull(Exception):
    """The write queue is full; retry after ``retry_after`` seconds."""

    def __init__(self, retry_after: int = 1) -> None:
        super().__init__(f"write queue full, retry after {retry_after}s")
        self.retry_after = retry_after


class WriterClosed(Exception):
    """The writer is stopping or stopped."""


@dataclass
class WriterStats:
    spans_written: int = 0
    batches_committed: int = 0
    commits_failed: int = 0
    queue_full: int = 0
    last_commit_seconds: float = 0.0
    most_commits_at_once: int = 0


@dataclass
class _Item:
    table: pa.Table | None
    parts: pa.Table | None
    task: Callable[[Any], Any] | None
    future: Future[Any]
    meta: Any = None
    rows: int = 0  # what a task counts against the queue's bound until it has run


class Writer:
    def __init__(
        self,
        store: SpanSink,
        *,
        max_pending_spans: int = 262_144,
        max_batch_spans: int = 65_536,
        on_commit: Callable[[pa.Table, float, list[Any]], None] | None = None,
        linger_s: float = 0.004,
        idle_s: float = 1.0,
        commit_spans: int | None = None,
        arrival_gap_s: float = 0.005,
    ) -> None:
        self._store = store
        # Maintenance (store.maintain) runs after every commit, and once more, with idle=True,
        # when nothing has been queued for ``idle_s``: "idle" is a pause in ingest, not an empty
        # queue between a lone exporter's requests (which would checkpoint at every 64 MB of WAL
        # instead of at row-group boundaries, and fold trace parts every second).
        self._idle_s = idle_s
        self._idle_done = True
        # Group commit: while requests are still being decoded (``decoding``), wait up to
        # ``linger_s`` for them before committing, so one transaction, fsync and exposition pass
        # serve several requests. A lone request never waits (nothing else is in flight).
        self._linger = linger_s
        self._decoding = 0
        # Called after each committed batch (rows, seconds the commit took, the ``meta`` of each
        # request in it, in order), one batch at a time: the Prometheus exposition folds them in.
        self._on_commit = on_commit
        self._observe_lock = threading.Lock()
        self._max_pending = max_pending_spans
        self._max_batch = max_batch_spans
        self._queue: deque[_Item] = deque()
        self._pending = 0  # rows queued or being committed: what the bound counts
        self._queued = 0  # rows queued only
        self._cond = threading.Condition()
        self._closed = False
        self.stats = WriterStats()
        # Several commits at once (a store's ``concurrent_writes``): a second one starts while
        # another is running only once a commit's worth of rows waits (``commit_spans`` of the
        # store's write profile), since each commit also costs the store a fixed amount (ClickHouse:
        # a part, its files and later a merge, whatever its size) — small overlapping commits
        # would spend the CPU on that instead of on rows.
        profile = store.write_profile
        # Whether the decoders build the trace parts for this store (store.summary): not for one
        # that computes the summaries from the span rows itself.
        self.wants_parts = not profile.computes_summary
        self.concurrency = max(1, profile.concurrent_writes)
        self._commit_spans = commit_spans if commit_spans is not None else profile.commit_spans
        self._committing = 0
        # A store whose every commit costs a fixed amount (``group_commit_s``, ClickHouse) has a
        # commit of less than a commit's worth wait up to that long for more requests while
        # several exporters are sending (more than one request waits, or more are being decoded)
        # and requests keep arriving (none for ``arrival_gap_s``: all that were coming are in):
        # those just acknowledged come back within a few ms, and one commit takes them all. A
        # lone exporter's request never waits.
        self._hold = profile.group_commit_s
        self._gap = arrival_gap_s
        self._last_arrival = 0.0
        self._threads = [
            threading.Thread(
                target=self._run, name="reach-collector-writer" + (f"-{i + 1}" if i else ""), daemon=True
            )
            for i in range(self.concurrency)
        ]
        for thread in self._threads:
            thread.start()

    @property
    def pending_spans(self) -> int:
        return self._pending

    def submit(self, table: pa.Table, parts: pa.Table, meta: Any = None) -> Future[None]:
        """Queue rows; the future resolves once they are committed (or fails with the error).
        ``meta`` is handed to ``on_commit`` with the committed batch."""
        future: Future[None] = Future()
        rows = table.num_rows
        with self._cond:
            if self._closed:
                raise WriterClosed("the collector is shutting down")
            # An oversized single request still goes through when the queue is empty.
            if self._pending and self._pending + rows > self._max_pending:
                self.stats.queue_full += 1
                raise QueueFull(retry_after=1)
            self._pending += rows
            self._queued += rows
            self._last_arrival = time.monotonic()
            self._queue.append(_Item(table, parts, None, future, meta))
            self._cond.notify()
        return future

    def decoding(self, delta: int) -> None:
        """A request started (+1) or finished (-1) decoding. No wake-up on -1: the rows follow
        at once in ``submit``, which wakes the writer with them queued."""
        with self._cond:
            self._decoding += delta
            if delta > 0:
                self._last_arrival = time.monotonic()

    def call(self, task: Callable[[Any], Any], rows: int = 0) -> Future[Any]:
        """Run ``task(store)`` on a writer thread, between its commits (e.g. retention); with one
        writer thread, between all commits. A task that writes ``rows`` rows (evaluations) counts
        them against the queue's bound as spans do: QueueFull when they do not fit."""
        future: Future[Any] = Future()
        with self._cond:
            if self._closed:
                raise WriterClosed("the collector is shutting down")
            if rows and self._pending and self._pending + rows > self._max_pending:
                self.stats.queue_full += 1
                raise QueueFull(retry_after=1)
            self._pending += rows
            self._queue.append(_Item(None, None, task, future, rows=rows))
            self._cond.notify()
        return future

    def close(self, timeout: float = 30.0) -> None:
        """Stop accepting work, drain what is queued, and join the threads."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def _take(self) -> list[_Item] | None:
        """The next batch; None when closed and drained; [] after ``idle_s`` without work (once
        per pause, for the idle maintenance)."""
        with self._cond:
            while True:
                while not self._queue:
                    if self._closed:
                        return None
                    if self._idle_done:
                        self._cond.wait()
                    elif not self._cond.wait(self._idle_s) and not self._queue and not self._idle_done:
                        self._idle_done = True
                        return []
                self._idle_done = False
                if self._queue[0].task is None and self._decoding > 0 and self._linger > 0:
                    deadline = time.monotonic() + self._linger
                    while self._decoding > 0 and self._queued < self._max_batch and not self._closed:
                        remaining = deadline - time.monotonic()
                        if remaining <= 0:
                            break
                        self._cond.wait(remaining)
                if self._hold > 0 and self._queue and self._queue[0].task is None:
                    deadline = time.monotonic() + self._hold
                    while (
                        (len(self._queue) > 1 or self._decoding > 0)
                        and self._queued < self._commit_spans
                        and not self._closed
                    ):
                        now = time.monotonic()
                        until = deadline if self._decoding else min(deadline, self._last_arrival + self._gap)
                        if until <= now:
                            break
                        self._cond.wait(until - now)
                if (
                    self._committing
                    and self._queue
                    and self._queue[0].task is None
                    and self._queued < self._commit_spans
                    and not self._closed
                ):
                    self._cond.wait()  # until that commit ends or a commit's worth of rows waits
                    continue
                if self._queue:  # another writer thread may have taken it meanwhile
                    break
            first = self._queue.popleft()
            if first.task is not None:
                return [first]
            items = [first]
            rows = first.table.num_rows if first.table is not None else 0
            while self._queue and self._queue[0].table is not None:
                nxt = self._queue[0].table
                if nxt is None or rows + nxt.num_rows > self._max_batch:
                    break
                items.append(self._queue.popleft())
                rows += nxt.num_rows
            self._queued -= rows
            self._committing += 1
            self.stats.most_commits_at_once = max(self.stats.most_commits_at_once, self._committing)
            if self._queue:  # more than one batch's worth: another writer thread may take it
                self._cond.notify()
            return items

    def _run(self) -> None:
        while True:
            items = self._take()
            if items is None:
                return
            if items and items[0].task is not None:
                self._run_task(items[0])
            elif items:
                try:
                    self._commit(items)
                finally:
                    with self._cond:
                        self._committing -= 1
                        self._cond.notify_all()  # a thread waiting for this commit to end
            try:
                self._store.maintain(idle=not items)
            except Exception:  # maintenance is retried later; committed data is safe in the WAL
                log.exception("store maintenance failed")

    def _run_task(self, item: _Item) -> None:
        assert item.task is not None
        try:
            result = item.task(self._store)
        except Exception as exc:
            self._task_done(item.rows)
            item.future.set_exception(exc)
            return
        self._task_done(item.rows)
        item.future.set_result(result)

    def _task_done(self, rows: int) -> None:
        if rows:
            with self._cond:
                self._pending -= rows

    def _commit(self, items: list[_Item]) -> None:
        tables = [i.table for i in items if i.table is not None]
        parts = [i.parts for i in items if i.parts is not None]
        rows = sum(t.num_rows for t in tables)
        started = time.perf_counter()
        try:
            if len(tables) == 1:
                table = tables[0]
                self._store.write(table, parts[0])
            else:
                # One chunk per column: DuckDB scans each chunk as a parallel task, which costs
                # more CPU than it saves at these sizes.
                table = pa.concat_tables(tables).combine_chunks()
                self._store.write(table, pa.concat_tables(parts).combine_chunks())
        except Exception as exc:
            with self._cond:
                self.stats.commits_failed += 1
            if len(items) > 1:
                # One bad request must not fail the others that shared its transaction.
                for item in items:
                    self._commit([item])
                return
            log.warning("span batch commit failed: %s", exc)
            self._finish(items, rows, exc)
            return
        seconds = time.perf_counter() - started
        with self._cond:
            self.stats.last_commit_seconds = seconds
            self.stats.batches_committed += 1
            self.stats.spans_written += rows
        if self._on_commit is not None:
            # Before the acknowledgements, so whoever got a 200 also sees the spans in /metrics;
            # one batch at a time, so observers keep their state as with one writer thread.
            try:
                with self._observe_lock:
                    self._on_commit(table, seconds, [i.meta for i in items])
            except Exception:  # observers must never stop ingest
                log.exception("commit observer failed")
        self._finish(items, rows, None)

    def _finish(self, items: list[_Item], rows: int, exc: Exception | None) -> None:
        with self._cond:
            self._pending -= rows
        for item in items:
            # A caller that gave up (client gone) may have cancelled its future; the rows stay.
            if item.future.cancelled():
                continue
            try:
                if exc is None:
                    item.future.set_result(None)
                else:
                    item.future.set_exception(exc)
            except InvalidStateError:
                pass

"""The writer with a store that takes several commits at once (``concurrent_writes``, as ClickHouse
declares) and waits for larger commits (``group_commit_s``): a second commit starts only once a
commit's worth of rows waits; a failed commit still fails exactly its own requests; the queue stays
bounded; tasks run beside a commit; closing drains every thread. A store that declares nothing
(DuckDB) keeps exactly one writer thread and one commit at a time."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

import pyarrow as pa
import pytest

from reach_collector.ingest.writer import QueueFull, Writer
from reach_collector.store.base import WriteProfile
from reach_collector.store.duckdb_store import DuckDBStore
from reach_collector.store.schema import ARROW_SCHEMA, PARTS_ARROW_SCHEMA

T0 = 1_700_000_000_000_000_000


class GatedStore:
    """A store whose writes each wait for their own gate; records what every write held and how
    many ran at once, and refuses a batch holding a span named ``bad``."""

    def __init__(self, concurrent_writes: int = 2, group_commit_s: float = 0.0) -> None:
        self.write_profile = WriteProfile(concurrent_writes=concurrent_writes, group_commit_s=group_commit_s)
        self.cond = threading.Condition()
        self.active = 0
        self.most_at_once = 0
        self.begun: list[list[str]] = []  # each write's span names, as it began
        self.written: list[str] = []
        self.gates: list[threading.Event] = []
        self.open = False

    def write(self, table: pa.Table, parts: pa.Table) -> None:
        names = table.column("name").to_pylist()
        gate = threading.Event()
        with self.cond:
            self.active += 1
            self.most_at_once = max(self.most_at_once, self.active)
            self.begun.append(names)
            self.gates.append(gate)
            self.cond.notify_all()
        try:
            if not self.open:
                gate.wait(10)
            if "bad" in names:
                raise RuntimeError("refused")
            with self.cond:
                self.written.extend(names)
        finally:
            with self.cond:
                self.active -= 1
                self.cond.notify_all()

    def maintain(self, idle: bool) -> None:
        pass

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
        with self.cond:
            return self.cond.wait_for(predicate, timeout)

    def release(self, i: int) -> None:
        self.gates[i].set()

    def release_all(self) -> None:
        with self.cond:
            self.open = True
            for gate in self.gates:
                gate.set()


def _rows(name: str, n: int) -> pa.Table:
    return pa.table({"name": [name] * n})


def _submit(writer: Writer, name: str, n: int) -> Future[None]:
    return writer.submit(_rows(name, n), _rows(name, 0))


def test_a_second_commit_starts_only_once_a_commit_worth_of_rows_waits() -> None:
    store = GatedStore()
    writer = Writer(store, commit_spans=100, linger_s=0)
    try:
        assert writer.concurrency == 2
        a = _submit(writer, "a", 10)
        assert store.wait_for(lambda: store.active == 1)
        b = _submit(writer, "b", 10)
        time.sleep(0.3)
        assert store.active == 1 and len(store.begun) == 1  # 10 rows wait: not worth a part of its own
        c = _submit(writer, "c", 90)
        assert store.wait_for(lambda: store.active == 2)
        assert store.begun[1] == ["b"] * 10 + ["c"] * 90  # one commit for both
        assert not (a.done() or b.done() or c.done())
        store.release(1)
        b.result(5), c.result(5)
        assert not a.done()  # acknowledged only once its own commit is done
        store.release(0)
        a.result(5)
        assert writer.stats.most_commits_at_once == 2
    finally:
        store.release_all()
        writer.close()


def test_a_waiting_commit_starts_when_the_running_one_ends() -> None:
    store = GatedStore()
    writer = Writer(store, commit_spans=100, linger_s=0)
    try:
        a = _submit(writer, "a", 10)
        assert store.wait_for(lambda: store.active == 1)
        b = _submit(writer, "b", 10)
        time.sleep(0.2)
        store.release_all()
        a.result(5), b.result(5)
        assert store.begun == [["a"] * 10, ["b"] * 10]
        assert store.most_at_once == 1
    finally:
        store.release_all()
        writer.close()


def test_a_failed_commit_fails_only_its_own_requests_while_another_runs() -> None:
    store = GatedStore()
    writer = Writer(store, commit_spans=10, linger_s=0)
    try:
        a = _submit(writer, "a", 5)
        assert store.wait_for(lambda: store.active == 1)
        bad = _submit(writer, "bad", 5)
        c = _submit(writer, "c", 5)
        assert store.wait_for(lambda: store.active == 2)
        store.release_all()
        with pytest.raises(RuntimeError, match="refused"):
            bad.result(5)
        c.result(5), a.result(5)
        assert sorted(store.written) == ["a"] * 5 + ["c"] * 5
        assert writer.stats.commits_failed == 2  # the shared commit, then the bad request alone
        assert writer.pending_spans == 0
    finally:
        store.release_all()
        writer.close()


def test_the_queue_stays_bounded_while_commits_run() -> None:
    store = GatedStore()
    writer = Writer(store, max_pending_spans=200, commit_spans=100, linger_s=0)
    try:
        a = _submit(writer, "a", 100)
        assert store.wait_for(lambda: store.active == 1)
        b = _submit(writer, "b", 100)
        assert store.wait_for(lambda: store.active == 2)
        with pytest.raises(QueueFull):  # rows being committed still count
            _submit(writer, "c", 1)
        assert writer.stats.queue_full == 1
        store.release_all()
        a.result(5), b.result(5)
        _submit(writer, "c", 1).result(5)
    finally:
        store.release_all()
        writer.close()


def test_a_task_runs_beside_a_running_commit_and_close_drains_every_thread() -> None:
    store = GatedStore()
    writer = Writer(store, commit_spans=100, linger_s=0)
    try:
        a = _submit(writer, "a", 10)
        assert store.wait_for(lambda: store.active == 1)
        assert writer.call(lambda s: "ran").result(5) == "ran"
        queued = [_submit(writer, f"q{i}", 10) for i in range(5)]
        threading.Timer(0.2, store.release_all).start()
    finally:
        writer.close(10)
    assert all(f.done() and f.exception() is None for f in (a, *queued))
    assert len(writer._threads) == 2 and not any(t.is_alive() for t in writer._threads)


def test_commits_wait_for_the_requests_of_exporters_just_acknowledged() -> None:
    store = GatedStore(concurrent_writes=1, group_commit_s=2.0)
    writer = Writer(store, commit_spans=100, linger_s=0, arrival_gap_s=0.3)
    try:
        first = _submit(writer, "x", 10)
        assert store.wait_for(lambda: store.active == 1)
        a, b = _submit(writer, "a", 10), _submit(writer, "b", 10)  # two exporters wait on x
        store.release_all()
        first.result(5)
        time.sleep(0.05)
        c = _submit(writer, "c", 10)  # x's exporter back with its next request
        a.result(5), b.result(5), c.result(5)
        assert store.begun[1] == ["a"] * 10 + ["b"] * 10 + ["c"] * 10
        # A lone exporter (one request, nothing else being decoded) never waits.
        started = time.perf_counter()
        _submit(writer, "lone", 10).result(5)
        assert time.perf_counter() - started < 0.25
    finally:
        store.release_all()
        writer.close()


def test_a_waiting_commit_goes_once_requests_stop_arriving() -> None:
    store = GatedStore(concurrent_writes=1, group_commit_s=5.0)
    writer = Writer(store, commit_spans=100, linger_s=0, arrival_gap_s=0.2)
    try:
        first = _submit(writer, "x", 10)
        assert store.wait_for(lambda: store.active == 1)
        a, b = _submit(writer, "a", 10), _submit(writer, "b", 10)
        started = time.perf_counter()
        store.release_all()
        first.result(5), a.result(5), b.result(5)
        assert time.perf_counter() - started < 2.0  # the gap ended the wait, not the 5 s bound
        assert store.begun[1] == ["a"] * 10 + ["b"] * 10
    finally:
        store.release_all()
        writer.close()


class RecordingStore:
    """A real DuckDB store, recording whether two writes ever ran at once."""

    def __init__(self, inner: DuckDBStore) -> None:
        self.inner = inner
        self.write_profile = inner.write_profile
        self.lock = threading.Lock()
        self.active = 0
        self.most_at_once = 0

    def write(self, table: pa.Table, parts: pa.Table) -> None:
        with self.lock:
            self.active += 1
            self.most_at_once = max(self.most_at_once, self.active)
        try:
            time.sleep(0.002)  # a window for another write to overlap, were there one
            self.inner.write(table, parts)
        finally:
            with self.lock:
                self.active -= 1

    def maintain(self, idle: bool) -> None:
        self.inner.maintain(idle)


def _batch(first: int, n: int) -> tuple[pa.Table, pa.Table]:
    """``n`` spans of one trace each (ids from ``first``), and their trace parts."""
    ids = range(first, first + n)
    columns = {
        "trace_id": [f"{i + 1:032x}" for i in ids],
        "span_id": [f"{i + 1:016x}" for i in ids],
        "name": ["op"] * n,
        "start_ns": [T0 + i for i in ids],
        "end_ns": [T0 + i + 500 for i in ids],
        "attributes": ["{}"] * n,
        "resource": ['{"service.name":"svc"}'] * n,
    }
    table = pa.table(
        {f.name: pa.array(columns.get(f.name, [None] * n), f.type) for f in ARROW_SCHEMA}, ARROW_SCHEMA
    )
    parts = {
        "trace_id": columns["trace_id"],
        "first_start_ns": columns["start_ns"],
        "last_end_ns": columns["end_ns"],
        "span_count": [1] * n,
    }
    part_table = pa.table(
        {f.name: pa.array(parts.get(f.name, [None] * n), f.type) for f in PARTS_ARROW_SCHEMA},
        PARTS_ARROW_SCHEMA,
    )
    return table, part_table


def test_duckdb_keeps_one_writer_thread_and_one_commit_at_a_time(tmp_path: Path) -> None:
    store = DuckDBStore(tmp_path / "one.duckdb")
    recording = RecordingStore(store)
    writer = Writer(recording)  # type: ignore[arg-type]
    futures: list[Future[None]] = []
    lock = threading.Lock()

    def exporter(k: int) -> None:
        for i in range(20):
            f = writer.submit(*_batch((k * 20 + i) * 50, 50))
            with lock:
                futures.append(f)
            f.result(10)

    try:
        assert writer.concurrency == 1
        threads = [threading.Thread(target=exporter, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert len(futures) == 160 and all(f.exception() is None for f in futures)
        assert recording.most_at_once == 1
        assert writer.stats.most_commits_at_once == 1
        assert writer.stats.batches_committed < 160  # grouped, as before
        assert [t.name for t in writer._threads] == ["reach-collector-writer"]
        assert store.count_spans() == 160 * 50
    finally:
        writer.close()
        store.close()

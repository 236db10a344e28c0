"""When the store checkpoints: just after a row group of spans fills (under load), past the WAL's
recovery bound, and in a pause of ingest; never at a half-full row group under load."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pyarrow as pa

from reach_collector.ingest.writer import Writer
from reach_collector.store.duckdb_store import ROW_GROUP_ROWS, DuckDBStore
from reach_collector.store.schema import ARROW_SCHEMA, PARTS_ARROW_SCHEMA

T0 = 1_700_000_000_000_000_000


def _batch(first: int, n: int, spans_per_trace: int = 8) -> tuple[pa.Table, pa.Table]:
    """``n`` span rows (ids from ``first``), whole traces of ``spans_per_trace``, and their parts."""
    ids = range(first, first + n)
    trace = [f"{i // spans_per_trace + 1:032x}" for i in ids]
    start = [T0 + i * 1000 for i in ids]
    columns = {
        "trace_id": trace,
        "span_id": [f"{i + 1:016x}" for i in ids],
        "name": ["op"] * n,
        "start_ns": start,
        "end_ns": [s + 500 for s in start],
        "attributes": ['{"k":"' + "v" * 200 + '"}'] * n,
        "resource": ['{"service.name":"svc"}'] * n,
    }
    table = pa.table(
        {f.name: pa.array(columns.get(f.name, [None] * n), f.type) for f in ARROW_SCHEMA}, ARROW_SCHEMA
    )
    first_start: dict[str, int] = {}
    count: dict[str, int] = {}
    last_end: dict[str, int] = {}
    for t, s in zip(trace, start, strict=True):
        first_start.setdefault(t, s)
        last_end[t] = s + 500
        count[t] = count.get(t, 0) + 1
    traces = list(first_start)
    parts = {
        "trace_id": traces,
        "first_start_ns": [first_start[t] for t in traces],
        "last_end_ns": [last_end[t] for t in traces],
        "first_name": ["op"] * len(traces),
        "span_count": [count[t] for t in traces],
        "error_count": [0] * len(traces),
        "agents": [[] for _ in traces],
        "services": [["svc"] for _ in traces],
        "hops": [0] * len(traces),
    }
    return table, pa.table(
        {f.name: pa.array(parts.get(f.name, [None] * len(traces)), f.type) for f in PARTS_ARROW_SCHEMA},
        PARTS_ARROW_SCHEMA,
    )


def _wal(path: Path) -> int:
    wal = Path(str(path) + ".wal")
    return wal.stat().st_size if wal.exists() else 0


def _row_groups(store: DuckDBStore) -> list[int]:
    rows = store.query(
        "SELECT row_group_id, max(start + count) - min(start) FROM pragma_storage_info('spans') "
        "WHERE column_name = 'span_id' GROUP BY row_group_id ORDER BY row_group_id"
    )
    return [int(count) for _, count in rows]


def test_under_load_checkpoints_come_each_row_group_of_spans(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    # A 1 MB idle threshold: under load (idle=False) it must not trigger a checkpoint.
    store = DuckDBStore(db, checkpoint_bytes=1 << 20, compact_rows=10**9)
    step = 2048  # a divisor of ROW_GROUP_ROWS
    written = 0
    try:
        for boundary in (1, 2):
            while written + step <= boundary * ROW_GROUP_ROWS:
                assert store.checkpoints == boundary - 1, f"checkpointed at {written} rows"
                store.write(*_batch(written, step))
                written += step
                store.maintain(idle=False)
            assert store.checkpoints == boundary
            assert _wal(db) < 1 << 20  # the WAL was folded into the file
        # Each row group went to disk full, once.
        assert _row_groups(store) == [ROW_GROUP_ROWS, ROW_GROUP_ROWS]
        store.write(*_batch(written, 20_000))
        written += 20_000
        store.maintain(idle=False)
        assert store.checkpoints == 2
        # A pause in ingest checkpoints what the WAL holds.
        store.maintain(idle=True)
        assert store.checkpoints == 3
        assert store.count_spans() == written
    finally:
        store.close()


def test_the_wal_is_bounded_whatever_the_row_groups(tmp_path: Path) -> None:
    db = tmp_path / "b.duckdb"
    store = DuckDBStore(db, max_wal_bytes=2 << 20, compact_rows=10**9)
    try:
        for i in range(6):
            store.write(*_batch(i * 5_000, 5_000))
            store.maintain(idle=False)
            assert _wal(db) < 2 << 20
        assert store.checkpoints >= 2
        assert store.count_spans() == 30_000
    finally:
        store.close()


def test_the_writer_maintains_in_a_pause_not_between_a_lone_clients_requests(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    store = DuckDBStore(db, checkpoint_bytes=1 << 20)
    writer = Writer(store, idle_s=0.3)
    try:
        for i in range(12):  # one request at a time, as a lone exporter sends them
            writer.submit(*_batch(i * 2_000, 2_000)).result(10)
        assert _wal(db) > 1 << 20
        assert store.checkpoints == 0
        assert store.query("SELECT count(*) FROM traces") == [(0,)]  # parts not folded yet
        deadline = time.monotonic() + 10
        while store.checkpoints == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert store.checkpoints == 1
        assert store.query("SELECT count(*) FROM traces") == [(12 * 2_000 // 8,)]
        assert store.query("SELECT count(*) FROM trace_parts") == [(0,)]
    finally:
        writer.close()
        store.close()


def test_trace_lookups_are_not_held_back_by_a_checkpoint(tmp_path: Path) -> None:
    """DuckDB holds back a query that filters `traces` by its primary key until a running
    checkpoint ends; the store reads by trace_key meanwhile."""
    store = DuckDBStore(tmp_path / "l.duckdb", compact_rows=10**9)
    try:
        store.write(*_batch(0, 8_000))
        store.compact()  # the first 1 000 traces are in `traces`
        store.write(*_batch(8_000, 40_000))
        # Each table written waits this long before it is installed: a long checkpoint.
        store.query("SET debug_checkpoint_scan_sleep_ms = 150")
        known = f"{7:032x}"
        assert len(store.trace_spans(known) or []) == 8
        done = threading.Event()
        window: list[float] = []

        def run() -> None:
            window.append(time.perf_counter())
            store.checkpoint()
            window.append(time.perf_counter())
            done.set()

        lookups: list[tuple[float, float, int]] = []
        thread = threading.Thread(target=run)
        thread.start()
        while not done.is_set():
            started = time.perf_counter()
            rows = store.trace_spans(known) or []
            lookups.append((started, time.perf_counter(), len(rows)))
        thread.join()
        assert all(n == 8 for _, _, n in lookups)
        begin, end = window
        assert end - begin > 0.15
        inside = [(s, e) for s, e, _ in lookups if s > begin and e < end]
        assert len(inside) >= 3, f"{len(inside)} lookups finished during a {end - begin:.2f}s checkpoint"
        assert store.trace_spans(f"{999_999:032x}") is None
    finally:
        store.close()


def test_a_store_from_before_trace_key_gets_it_at_open(tmp_path: Path) -> None:
    db = tmp_path / "old.duckdb"
    store = DuckDBStore(db, compact_rows=10**9)
    store.write(*_batch(0, 800))
    store.compact()
    store.query("ALTER TABLE traces DROP COLUMN trace_key")  # as stores were made before it
    store.close()
    store = DuckDBStore(db)
    try:
        assert store.query("SELECT count(*) FROM traces WHERE trace_key IS NULL") == [(0,)]
        cur = store._cursor()
        assert store._bounds_by_key(cur, f"{5:032x}") == (T0 + 32_000, T0 + 39_500)
    finally:
        store.close()

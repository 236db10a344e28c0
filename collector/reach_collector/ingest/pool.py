"""Decoding off the event loop and off the writer: a pool of worker processes that turn request
bodies into Arrow IPC bytes, so flattening (the CPU-heavy step) uses every core, not one GIL."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Final

import pyarrow as pa

from reach_collector.ingest.batch_stats import BatchStats
from reach_collector.ingest.decode import PROTOBUF, decompress
from reach_collector.ingest.row_budget import flatten_within, out_of_memory
from reach_collector.ingest.rows import SpanBatch

_WARMUP: Final = b""


Payload = tuple[bytes, bytes, int, tuple[str, ...], BatchStats]


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def decode_to_ipc(
    body: bytes, media: str, encoding: str | None, max_bytes: int, max_row_bytes: int, parts: bool = True
) -> Payload:
    """In a worker: body → (span rows and trace parts as Arrow IPC streams, rejected,
    reasons, exposition stats); a request whose rows would cost more than ``max_row_bytes`` is
    refused here, before they are built (``cost.RowBudgetExceeded``). Without ``parts`` the trace
    parts are empty (a store that computes them itself).

    Raises the same ``BodyError`` subclasses as the inline path (they pickle by message)."""
    try:
        batch = flatten_within(decompress(body, encoding, max_bytes), media, max_row_bytes, parts)
        return _ipc(batch.table), _ipc(batch.parts), batch.rejected, batch.reasons, batch.stats
    except MemoryError as exc:  # this request is too large to hold: a 413, not a broken worker
        raise out_of_memory("decoding") from exc


def from_ipc(payload: Payload) -> SpanBatch:
    spans, parts, rejected, reasons, stats = payload
    return SpanBatch(
        table=pa.ipc.open_stream(pa.py_buffer(spans)).read_all(),
        parts=pa.ipc.open_stream(pa.py_buffer(parts)).read_all(),
        rejected=rejected,
        reasons=reasons,
        stats=stats,
    )


def _worker_init() -> None:
    # Ctrl-C (or a TERM to the process group) reaches the workers too; the parent shuts the pool
    # down in order, so they ignore it rather than dying mid-task. A dead parent closes their pipe.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # Siblings keep the task queue's pipe open, so a worker never sees EOF when the collector is
    # killed (-9): watch the parent instead, and leave with it.
    parent = os.getppid()
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


def workers_rss_bytes(pool: ProcessPoolExecutor) -> int | None:
    """Resident memory of the pool's worker processes together (from /proc; None where there is
    none). The executor keeps its processes private; ``_processes`` maps pid → process."""
    page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
    total = 0
    for pid in list(getattr(pool, "_processes", None) or {}):
        try:
            with open(f"/proc/{pid}/statm") as statm:
                total += int(statm.read().split()[1]) * page
        except (OSError, ValueError, IndexError):
            if not os.path.isdir("/proc"):
                return None
    return total


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)


def start_pool(workers: int) -> ProcessPoolExecutor:
    """Spawned (not forked) workers: the parent holds DuckDB and threads, which must not be forked."""
    pool = ProcessPoolExecutor(
        max_workers=workers, mp_context=multiprocessing.get_context("spawn"), initializer=_worker_init
    )
    # Start every worker now, so the first requests do not pay for interpreter start-up.
    for future in [pool.submit(decode_to_ipc, _WARMUP, PROTOBUF, None, 1, 1) for _ in range(workers)]:
        future.result()
    return pool

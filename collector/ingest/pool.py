"""Decoding off the event loop and off the writer: a pool of worker processes that turn request
bodies into Arrow IPC bytes, so flattening (the CPU-heavy step) uses every core, not one GIL."""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Final

import pyarrow as pa
from reach_collector.ingest.decode import PROTOBUF, decompress, parse
from reach_collector.ingest.rows import SpanBatch, flatten

_WARMUP: Final = b""


def decode_to_ipc(body: bytes, media: str, encoding: str | None, max_bytes: int) -> tuple[bytes, int, str]:
    """In a worker: body → (Arrow IPC stream of the rows, rejected count, message).

    Raises the same ``BodyError`` subclasses as the inline path (they pickle by message)."""
    batch = flatten(parse(decompress(body, encoding, max_bytes), media))
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.table.schema) as writer:
        writer.write_table(batch.table)
    return sink.getvalue().to_pybytes(), batch.rejected, batch.message


def from_ipc(payload: tuple[bytes, int, str]) -> SpanBatch:
    data, rejected, message = payload
    table = pa.ipc.open_stream(pa.py_buffer(data)).read_all()
    return SpanBatch(table=table, rejected=rejected, message=message)


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)


def start_pool(workers: int) -> ProcessPoolExecutor:
    """Spawned (not forked) workers: the parent holds DuckDB and threads, which must not be forked."""
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
    # Start every worker now, so the first requests do not pay for interpreter start-up.
    for future in [pool.submit(decode_to_ipc, _WARMUP, PROTOBUF, None, 1) for _ in range(workers)]:
        future.result()
    return pool

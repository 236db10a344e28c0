"""The ingest path shared by OTLP/HTTP and OTLP/gRPC: decode → validate → flatten → queue → commit."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from reach_collector.ingest import fast, memory
from reach_collector.ingest import row_budget as cost
from reach_collector.ingest.decode import PROTOBUF, BodyError, UndecodableBody, decompress
from reach_collector.ingest.evaluations import LogBatch, from_span_events
from reach_collector.ingest.logs import decode_logs, rows_within
from reach_collector.ingest.pool import decode_to_ipc, from_ipc
from reach_collector.ingest.rows import SpanBatch, flatten, merge_batches
from reach_collector.ingest.split import split_request
from reach_collector.ingest.writer import Writer

log = logging.getLogger(__name__)


class DecoderUnavailable(Exception):
    """The decoding workers are gone (shutting down or crashed): answer 503 / UNAVAILABLE."""


@dataclass
class IngestStats:
    requests: int = 0
    spans_received: int = 0
    spans_rejected: int = 0
    requests_rejected: int = 0
    requests_split: int = 0  # decoded in pieces by several workers at once
    log_records: int = 0  # OTLP log records received (evaluations or not)


class IngestService:
    def __init__(
        self,
        writer: Writer,
        max_body_bytes: int,
        pool: ProcessPoolExecutor | None = None,
        on_received: Callable[[int, int], None] | None = None,
        *,
        workers: int | None = None,
        split_min_bytes: int = 32 << 10,
        max_row_bytes: int = cost.DEFAULT_MAX_ROW_BYTES,
        max_inflight_bytes: int | None = None,
        on_logs: Callable[[LogBatch], None] | None = None,
        on_evaluations: Callable[[Any, list[tuple[Any, ...]]], None] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.writer = writer
        # (a logs request's batch) once decoded; (store, rows) once evaluation rows are stored,
        # on the writer thread: what /metrics counts.
        self._on_logs = on_logs
        self._on_evaluations = on_evaluations
        self._clock = clock or time.time
        self._on_received = on_received  # (spans received, of which rejected), per request
        self.max_body_bytes = max_body_bytes
        # The bound on what one request may cost in span rows (see ``ingest.row_budget``), checked on
        # every path before any row is built.
        self.max_row_bytes = max_row_bytes
        self.pool = pool
        self.stats = IngestStats()
        # Request bytes being read or decoded (touched only on the event loop thread): a body
        # reserves each chunk as it arrives (``reserve``), so a flood of large or slow uploads
        # gets 429s instead of memory; the write queue counts only decoded spans.
        self.inflight_bytes = 0
        self.max_inflight_bytes = (
            max(256 << 20, 4 * max_body_bytes) if max_inflight_bytes is None else max_inflight_bytes
        )
        self._trimmer = memory.Trimmer(threshold=self.max_inflight_bytes // 4)
        # Pieces being decoded in the pool right now (event loop thread only), and the pool's size.
        self._decoding = 0
        # ProcessPoolExecutor keeps its size private; it has been ``_max_workers`` since it exists.
        self.workers = (
            workers if workers is not None else int(getattr(pool, "_max_workers", 1) if pool else 0)
        )
        self.split_min_bytes = split_min_bytes

    def fits(self, size: int) -> bool:
        """Whether ``size`` more request bytes would stay within the in-flight bound now."""
        return self.inflight_bytes + size <= self.max_inflight_bytes

    def reserve(self, size: int) -> bool:
        """Count ``size`` more request bytes as held, unless that would pass the bound."""
        if not self.fits(size):
            return False
        self.inflight_bytes += size
        self._trimmer.held(self.inflight_bytes)
        return True

    def release(self, size: int) -> None:
        """The bytes of ``reserve`` are no longer held; once nothing is, the memory large
        bodies used is handed back to the system (see ``ingest.memory``)."""
        self.inflight_bytes -= size
        if self.inflight_bytes == 0:
            self._trimmer.idle()

    async def decode_async(self, body: bytes, media: str, encoding: str | None) -> SpanBatch:
        """Decode in a thread through the compiled path when it takes the request (it runs without
        the GIL, and no bytes cross a process boundary); else in the worker pool when there is
        one, else in a thread (the reference path). Raises ``BodyError``.

        In the pool, a large request that arrives while workers are idle is split between them
        (see ``ingest.split``): one exporter alone then gets every decoder, not one. Every path
        refuses a request over ``max_row_bytes`` (``cost.RowBudgetExceeded``) before building rows."""
        if media == PROTOBUF and fast.enabled():
            self.writer.decoding(1)  # the writer lingers for these rows to share a commit
            try:
                batch = await asyncio.to_thread(self._decode_fast, body, encoding)
            finally:
                self.writer.decoding(-1)
            if batch is not None:
                return batch
        if self.pool is None:
            return await asyncio.to_thread(self.decode_http, body, media, encoding)
        loop = asyncio.get_running_loop()
        pieces = await self._pieces(body, media, encoding)
        self.writer.decoding(1)
        self._decoding += len(pieces)
        try:
            payloads = await asyncio.gather(
                *(
                    loop.run_in_executor(
                        self.pool,
                        decode_to_ipc,
                        piece,
                        media,
                        encoding,
                        self.max_body_bytes,
                        self.max_row_bytes,
                        self.writer.wants_parts,
                    )
                    for piece in pieces
                )
            )
        except BodyError:
            raise
        except BrokenProcessPool as exc:
            raise DecoderUnavailable("the decoder pool is down") from exc
        except MemoryError as exc:  # this request is too large to hold, not the collector broken
            raise cost.out_of_memory("decoding") from exc
        except Exception as exc:
            log.warning("could not decode an OTLP request in a worker: %r", exc)
            raise UndecodableBody(f"could not process the spans: {type(exc).__name__}") from exc
        finally:
            self._decoding -= len(pieces)
            self.writer.decoding(-1)
        return self._count(merge_batches([from_ipc(p) for p in payloads]))

    async def _pieces(self, body: bytes, media: str, encoding: str | None) -> list[bytes]:
        idle = self.workers - self._decoding
        plain = media == PROTOBUF and (encoding or "identity").strip().lower() == "identity"
        if idle > 1 and plain and self.split_min_bytes <= len(body) <= self.max_body_bytes:
            # Both walks are over the whole body: off the event loop.
            pieces = await asyncio.to_thread(self._split, body, idle)
            if pieces:
                self.stats.requests_split += 1
                return pieces
        return [body]

    def _split(self, body: bytes, parts: int) -> list[bytes] | None:
        # Each piece would be checked alone in its worker, under the limit though the request is
        # over it: the request's cost is checked here, whole, before any piece is decoded.
        measured = cost.wire_cost(body)
        if measured is None:  # malformed framing: decoded whole, where the decoder says why
            return None
        cost.check(measured, self.max_row_bytes)
        return split_request(body, parts)

    def _decode_fast(self, body: bytes, encoding: str | None) -> SpanBatch | None:
        raw = decompress(body, encoding, self.max_body_bytes)
        measured = cost.wire_cost(raw)
        if measured is None:  # malformed framing: the reference decoder says what is wrong
            return None
        cost.check(measured, self.max_row_bytes)
        try:
            batch = fast.flatten_protobuf(raw, self.writer.wants_parts)
        except MemoryError as exc:
            raise cost.out_of_memory("decoding") from exc
        return None if batch is None else self._count(batch)

    def decode_pooled(self, request: ExportTraceServiceRequest) -> SpanBatch:
        """For gRPC (already parsed): the compiled path when it takes the request, else flatten in
        the pool when there is one, blocking the caller. Over ``max_row_bytes`` it raises
        ``cost.RowBudgetExceeded``, measured on the parsed request before anything else."""
        raw = request.SerializeToString() if fast.enabled() or self.pool is not None else None
        cost.check(
            cost.message_cost(request, len(raw) if raw is not None else request.ByteSize()),
            self.max_row_bytes,
        )
        if raw is not None and fast.enabled():
            batch = fast.flatten_protobuf(raw, self.writer.wants_parts)
            if batch is not None:
                return self._count(batch)
        if self.pool is None or raw is None:
            return self.flatten(request)
        try:
            payload = self.pool.submit(
                decode_to_ipc, raw, PROTOBUF, None, 2**31, self.max_row_bytes, self.writer.wants_parts
            ).result()
        except BodyError:
            raise
        except BrokenProcessPool as exc:
            raise DecoderUnavailable("the decoder pool is down") from exc
        except MemoryError as exc:
            raise cost.out_of_memory("decoding") from exc
        except Exception as exc:
            log.warning("could not decode an OTLP/gRPC request in a worker: %r", exc)
            raise UndecodableBody(f"could not process the spans: {type(exc).__name__}") from exc
        return self._count(from_ipc(payload))

    def _count(self, batch: SpanBatch) -> SpanBatch:
        self.stats.requests += 1
        self.stats.spans_received += batch.accepted + batch.rejected
        self.stats.spans_rejected += batch.rejected
        if self._on_received is not None:
            self._on_received(batch.accepted + batch.rejected, batch.rejected)
        return batch

    def decode_http(self, body: bytes, media: str, encoding: str | None) -> SpanBatch:
        """Body bytes → rows; raises a ``BodyError`` subclass for a 4xx."""
        raw = decompress(body, encoding, self.max_body_bytes)
        return self._rows(cost.flatten_within, raw, media, self.max_row_bytes, self.writer.wants_parts)

    def flatten(self, request: ExportTraceServiceRequest) -> SpanBatch:
        return self._rows(flatten, request, self.writer.wants_parts)

    def _rows(self, make: Callable[..., SpanBatch], *args: Any) -> SpanBatch:
        try:
            batch = make(*args)
        except BodyError:
            raise
        except MemoryError as exc:  # too large to hold: a 413 for this request, never a retry
            raise cost.out_of_memory("decoding") from exc
        except Exception as exc:
            # Hostile input must get a 4xx, never a 5xx; log it so a bug still shows.
            log.warning("could not flatten an OTLP request", exc_info=True)
            raise UndecodableBody(f"could not process the spans: {type(exc).__name__}") from exc
        return self._count(batch)

    def submit(self, batch: SpanBatch) -> Future[None] | None:
        """Queue the accepted rows (None when there are none); may raise QueueFull/WriterClosed.
        The ``gen_ai.evaluation.result`` events among them are queued as evaluation rows too, and
        the future resolves once both are stored."""
        if batch.accepted == 0:
            return None
        evaluations = from_span_events(batch.table)
        spans = self.writer.submit(batch.table, batch.parts, batch.stats)
        if not evaluations:
            return spans
        try:
            stored = self.submit_evaluations(evaluations)
        except BaseException:
            spans.cancel()  # not acknowledged: the exporter sends it again
            raise
        assert stored is not None  # rows were given
        return _both(spans, stored)

    # --- OTLP logs: evaluations -------------------------------------------------------------------
    def _count_logs(self, batch: LogBatch) -> LogBatch:
        self.stats.requests += 1
        self.stats.log_records += batch.records
        if self._on_logs is not None:
            self._on_logs(batch)
        return batch

    async def decode_logs_async(self, body: bytes, media: str, encoding: str | None) -> LogBatch:
        """An OTLP/HTTP logs body → its evaluation rows, in a thread; raises ``BodyError``."""
        now_ns = int(self._clock() * 1e9)
        return self._count_logs(
            await asyncio.to_thread(
                self._logs,
                decode_logs,
                body,
                media,
                encoding,
                self.max_body_bytes,
                self.max_row_bytes,
                now_ns,
            )
        )

    def decode_logs_request(self, request: ExportLogsServiceRequest) -> LogBatch:
        """A parsed gRPC logs request → its evaluation rows; raises ``BodyError``."""
        now_ns = int(self._clock() * 1e9)
        return self._count_logs(
            self._logs(rows_within, request, request.ByteSize(), self.max_row_bytes, now_ns)
        )

    def _logs(self, make: Callable[..., LogBatch], *args: Any) -> LogBatch:
        try:
            return make(*args)
        except BodyError:
            raise
        except MemoryError as exc:
            raise cost.out_of_memory("decoding") from exc
        except Exception as exc:  # hostile input gets a 4xx, never a 5xx; logged so a bug still shows
            log.warning("could not read an OTLP logs request", exc_info=True)
            raise UndecodableBody(f"could not process the log records: {type(exc).__name__}") from exc

    def submit_evaluations(self, rows: list[tuple[Any, ...]]) -> Future[None] | None:
        """Queue evaluation rows (None when there are none), counted against the write queue's bound
        as spans are; the future resolves once they are committed. May raise QueueFull/WriterClosed."""
        if not rows:
            return None
        observe = self._on_evaluations

        def store_rows(store: Any) -> None:
            store.append("evaluations", rows)
            if observe is not None:
                try:
                    observe(store, rows)
                except Exception:  # observers must never stop ingest
                    log.exception("evaluation observer failed")

        future: Future[None] = self.writer.call(store_rows, rows=len(rows))
        return future


def _both(first: Future[None], second: Future[None]) -> Future[None]:
    """A future that resolves once both have, failing with the first one's error if either fails."""
    out: Future[None] = Future()
    lock = threading.Lock()  # the two may finish on two writer threads at once

    def done(_: Future[None]) -> None:
        with lock:
            if not (first.done() and second.done()) or out.done():
                return
            _settle(out, first, second)

    first.add_done_callback(done)
    second.add_done_callback(done)
    return out


def _settle(out: Future[None], first: Future[None], second: Future[None]) -> None:
    for part in (first, second):
        if part.cancelled():
            out.cancel()
            return
        exc = part.exception()
        if exc is not None:
            out.set_exception(exc)
            return
    out.set_result(None)

"""The ingest path shared by OTLP/HTTP and OTLP/gRPC: decode → validate → flatten → queue → commit."""

from __future__ import annotations

import logging
from concurrent.futures import Future
from dataclasses import dataclass

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from reach_collector.ingest.decode import UndecodableBody, decompress, parse
from reach_collector.ingest.rows import SpanBatch, flatten
from reach_collector.ingest.writer import Writer

log = logging.getLogger(__name__)


@dataclass
class IngestStats:
    requests: int = 0
    spans_received: int = 0
    spans_rejected: int = 0
    requests_rejected: int = 0


class IngestService:
    def __init__(self, writer: Writer, max_body_bytes: int) -> None:
        self.writer = writer
        self.max_body_bytes = max_body_bytes
        self.stats = IngestStats()

    def decode_http(self, body: bytes, media: str, encoding: str | None) -> SpanBatch:
        """Body bytes → rows; raises a ``BodyError`` subclass for a 4xx."""
        raw = decompress(body, encoding, self.max_body_bytes)
        return self.flatten(parse(raw, media))

    def flatten(self, request: ExportTraceServiceRequest) -> SpanBatch:
        try:
            batch = flatten(request)
        except Exception as exc:
            # Hostile input must get a 4xx, never a 5xx; log it so a bug still shows.
            log.warning("could not flatten an OTLP request", exc_info=True)
            raise UndecodableBody(f"could not process the spans: {type(exc).__name__}") from exc
        self.stats.requests += 1
        self.stats.spans_received += batch.accepted + batch.rejected
        self.stats.spans_rejected += batch.rejected
        return batch

    def submit(self, batch: SpanBatch) -> Future[None] | None:
        """Queue the accepted rows (None when there are none); may raise QueueFull/WriterClosed."""
        if batch.accepted == 0:
            return None
        return self.writer.submit(batch.table)

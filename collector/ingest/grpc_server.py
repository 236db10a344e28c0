"""OTLP/gRPC ingest (`TraceService/Export`, default port 4317), sharing the HTTP path's service.

Same validation, partial success and durability; backpressure answers RESOURCE_EXHAUSTED. A
request that can never be stored (malformed, or over ``server.max_row_bytes``) answers
INVALID_ARGUMENT: the OTLP specification's OTLP/gRPC failure table makes it not retryable, where
UNAVAILABLE (and RESOURCE_EXHAUSTED, which the Python exporter retries regardless of RetryInfo)
would have the exporter send the same body again forever.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from reach_collector.api.auth import check
from reach_collector.ingest.cost import out_of_memory
from reach_collector.ingest.decode import BodyError
from reach_collector.ingest.service import DecoderUnavailable, IngestService
from reach_collector.ingest.writer import QueueFull, WriterClosed

log = logging.getLogger(__name__)
_COMMIT_TIMEOUT_S = 60.0


class TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, ingest: IngestService, ingest_token: str | None, query_token: str | None) -> None:
        self._ingest = ingest
        self._ingest_token = ingest_token
        self._query_token = query_token

    def _authorize(self, context: Any) -> None:
        if not (self._ingest_token or self._query_token):
            return
        header = None
        for key, value in context.invocation_metadata():
            if key == "authorization":
                header = value
        status = check("/v1/traces", header, self._ingest_token, self._query_token)
        if status == 401:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token")
        if status == 403:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, "this token may not ingest")

    def Export(self, request: ExportTraceServiceRequest, context: Any) -> ExportTraceServiceResponse:
        self._authorize(context)
        try:
            batch = self._ingest.decode_pooled(request)
        except BodyError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        except DecoderUnavailable as exc:
            context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        try:
            future = self._ingest.submit(batch)
        except QueueFull as exc:
            context.set_trailing_metadata((("retry-after", str(exc.retry_after)),))
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        except WriterClosed as exc:
            context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        if future is not None:
            try:
                future.result(timeout=_COMMIT_TIMEOUT_S)
            except MemoryError:  # this request's rows do not fit: retrying it fails the same way
                log.warning("gRPC ingest commit ran out of memory for %d spans", batch.accepted)
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(out_of_memory("storing")))
            except Exception as exc:
                log.warning("gRPC ingest commit failed: %s", exc)
                context.abort(grpc.StatusCode.UNAVAILABLE, "could not store the spans; retry")
        response = ExportTraceServiceResponse()
        if batch.rejected:
            response.partial_success.rejected_spans = batch.rejected
            response.partial_success.error_message = batch.message
        return response


def start_grpc(
    ingest: IngestService,
    host: str,
    port: int,
    *,
    ingest_token: str | None = None,
    query_token: str | None = None,
    workers: int = 8,
) -> tuple[grpc.Server, int]:
    """Start the gRPC server; returns it and the bound port (``port=0`` picks a free one)."""
    server = grpc.server(
        ThreadPoolExecutor(max_workers=workers, thread_name_prefix="reach-collector-grpc"),
        options=[
            ("grpc.max_receive_message_length", ingest.max_body_bytes),
            ("grpc.so_reuseport", 0),
        ],
    )
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(  # type: ignore[no-untyped-call]
        TraceService(ingest, ingest_token, query_token), server
    )
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    bound = server.add_insecure_port(address)
    if bound == 0:
        raise OSError(f"cannot listen for gRPC on {address}")
    server.start()
    return server, bound

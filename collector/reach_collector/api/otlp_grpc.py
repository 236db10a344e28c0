"""OTLP/gRPC ingest (`TraceService/Export` and `LogsService/Export`, default port 4317), sharing the
HTTP path's service.

Same validation, partial success and durability; backpressure answers RESOURCE_EXHAUSTED. A
request that can never be stored (malformed, or over ``server.max_row_bytes``) answers
INVALID_ARGUMENT: the OTLP specification's OTLP/gRPC failure table makes it not retryable, where
UNAVAILABLE (and RESOURCE_EXHAUSTED, which the Python exporter retries regardless of RetryInfo)
would have the exporter send the same body again forever.

The token is checked on the call's metadata before its message is read: the method is served as
client-streaming (the same bytes on the wire as unary) with no deserializer, so an unauthenticated
call is answered without its message being received whole or parsed. The message must then arrive
within ``server.body_timeout`` (``Watchdog`` cancels the call otherwise), calls in progress are
capped (``server.grpc_max_concurrent_rpcs``), idle and unresponsive connections closed.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Final

import grpc
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from reach_collector.api.auth import check
from reach_collector.ingest.decode import BodyError
from reach_collector.ingest.logs import LOGS_PATH, logs_response
from reach_collector.ingest.row_budget import out_of_memory
from reach_collector.ingest.service import DecoderUnavailable, IngestService
from reach_collector.ingest.writer import QueueFull, WriterClosed
from reach_collector.limits import ServerLimits

log = logging.getLogger(__name__)
_COMMIT_TIMEOUT_S = 60.0
SERVICE: Final = "opentelemetry.proto.collector.trace.v1.TraceService"
LOGS_SERVICE: Final = "opentelemetry.proto.collector.logs.v1.LogsService"
_PING_TIMEOUT_MS: Final = 20_000


class Watchdog:
    """One thread that calls each registered ``cancel`` whose deadline passes before the caller
    says it is done (``watch`` returns the function that says so). One serves every server in the
    process (``WATCHDOG``); its thread starts with the first call watched."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._heap: list[tuple[float, int, list[Any]]] = []
        self._order = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def watch(self, timeout_s: float, cancel: Callable[[], Any]) -> Callable[[], None]:
        entry: list[Any] = [cancel]
        with self._wake:
            heapq.heappush(self._heap, (self._clock() + timeout_s, next(self._order), entry))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="reach-collector-grpc-deadline", daemon=True
                )
                self._thread.start()
            self._wake.notify()
        return entry.clear  # an empty entry is done: its deadline passes without a cancel

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._heap or self._heap[0][0] > self._clock():
                    self._wake.wait(None if not self._heap else self._heap[0][0] - self._clock())
                _, _, entry = heapq.heappop(self._heap)
            for cancel in entry:
                try:
                    cancel()
                except Exception:  # a call that ended meanwhile
                    log.debug("cancelling a late gRPC call failed", exc_info=True)


WATCHDOG: Final = Watchdog()


class TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    """``TraceService/Export``; ``LogsService`` below shares its token check, body deadline and
    backpressure, for another request type."""

    _REQUEST: Any = ExportTraceServiceRequest
    _PATH = "/v1/traces"  # the HTTP route whose token scope this service has

    def __init__(
        self,
        ingest: IngestService,
        ingest_token: str | None,
        query_token: str | None,
        *,
        body_timeout_s: float = ServerLimits().body_timeout_s,
        watchdog: Watchdog | None = None,
    ) -> None:
        self._ingest = ingest
        self._ingest_token = ingest_token
        self._query_token = query_token
        self._body_timeout_s = body_timeout_s
        self._watchdog = watchdog or WATCHDOG

    def export_raw(self, messages: Iterator[bytes], context: Any) -> Any:
        """``Export`` as the server runs it: the token first, then the message's bytes (within
        the body timeout), then the parse."""
        self._authorize(context)
        late: list[bool] = []

        def cut_off() -> None:
            late.append(True)
            context.cancel()

        done = self._watchdog.watch(self._body_timeout_s, cut_off)
        try:
            raw = next(messages, None)
        except grpc.RpcError:  # cancelled at its deadline, or the client went away
            raw = None
        finally:
            done()
        if raw is None:
            if late:  # the call is cancelled already; this only ends the handler
                context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "the request did not arrive in time")
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no request message")
        try:
            request = self._REQUEST.FromString(raw)
        except DecodeError as exc:
            name = self._REQUEST.DESCRIPTOR.name
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"not an {name}: {exc}")
        return self._export(request, context)

    def _authorize(self, context: Any) -> None:
        if not (self._ingest_token or self._query_token):
            return
        header = None
        for key, value in context.invocation_metadata():
            if key == "authorization":
                header = value
        status = check(self._PATH, header, self._ingest_token, self._query_token)
        if status == 401:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token")
        if status == 403:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, "this token may not ingest")

    def Export(self, request: ExportTraceServiceRequest, context: Any) -> ExportTraceServiceResponse:
        self._authorize(context)
        return self._export(request, context)

    def _export(self, request: ExportTraceServiceRequest, context: Any) -> ExportTraceServiceResponse:
        try:
            batch = self._ingest.decode_pooled(request)
        except BodyError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        except DecoderUnavailable as exc:
            context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        self._commit(lambda: self._ingest.submit(batch), context, "spans")
        response = ExportTraceServiceResponse()
        if batch.rejected:
            response.partial_success.rejected_spans = batch.rejected
            response.partial_success.error_message = batch.message
        return response

    def _commit(self, submit: Callable[[], Future[None] | None], context: Any, what: str) -> None:
        """Queue the rows and wait for their commit; aborts the call under backpressure
        (RESOURCE_EXHAUSTED) or when they could not be stored."""
        try:
            future = submit()
        except QueueFull as exc:
            context.set_trailing_metadata((("retry-after", str(exc.retry_after)),))
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        except WriterClosed as exc:
            context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        if future is not None:
            try:
                future.result(timeout=_COMMIT_TIMEOUT_S)
            except MemoryError:  # this request's rows do not fit: retrying it fails the same way
                log.warning("gRPC ingest commit ran out of memory for a request of %s", what)
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(out_of_memory("storing")))
            except Exception as exc:
                log.warning("gRPC ingest commit failed: %s", exc)
                context.abort(grpc.StatusCode.UNAVAILABLE, f"could not store the {what}; retry")


class LogsService(TraceService):
    """``LogsService/Export``: the evaluations among the records stored (ingest.evaluations), the
    other records counted and dropped; the same checks, partial success and durability."""

    _REQUEST = ExportLogsServiceRequest
    _PATH = LOGS_PATH

    def _export(self, request: Any, context: Any) -> Any:
        try:
            batch = self._ingest.decode_logs_request(request)
        except BodyError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        self._commit(lambda: self._ingest.submit_evaluations(batch.rows), context, "evaluations")
        return logs_response(batch)


def start_grpc(
    ingest: IngestService,
    host: str,
    port: int,
    *,
    ingest_token: str | None = None,
    query_token: str | None = None,
    workers: int = 8,
    limits: ServerLimits | None = None,
) -> tuple[grpc.Server, int]:
    """Start the gRPC server; returns it and the bound port (``port=0`` picks a free one)."""
    limits = limits or ServerLimits()
    server = grpc.server(
        ThreadPoolExecutor(max_workers=workers, thread_name_prefix="reach-collector-grpc"),
        options=[
            ("grpc.max_receive_message_length", ingest.max_body_bytes),
            ("grpc.so_reuseport", 0),
            # A connection that has not finished the HTTP/2 handshake by then is dropped.
            ("grpc.server_handshake_timeout_ms", int(limits.header_timeout_s * 1000)),
            ("grpc.keepalive_time_ms", int(limits.grpc_keepalive_s * 1000)),
            ("grpc.keepalive_timeout_ms", _PING_TIMEOUT_MS),
            ("grpc.max_connection_idle_ms", int(limits.grpc_idle_timeout_s * 1000)),
        ],
        maximum_concurrent_rpcs=limits.grpc_max_concurrent_rpcs,
    )
    for name, kind, response in (
        (SERVICE, TraceService, ExportTraceServiceResponse),
        (LOGS_SERVICE, LogsService, ExportLogsServiceResponse),
    ):
        service = kind(ingest, ingest_token, query_token, body_timeout_s=limits.body_timeout_s)
        export = grpc.stream_unary_rpc_method_handler(
            service.export_raw,
            request_deserializer=None,  # bytes: parsed only once the token has been checked
            response_serializer=response.SerializeToString,
        )
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(name, {"Export": export}),))
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    bound = server.add_insecure_port(address)
    if bound == 0:
        raise OSError(f"cannot listen for gRPC on {address}")
    server.start()
    return server, bound

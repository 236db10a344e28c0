"""The evaluation side of ``init()``: a LoggerProvider whose bounded batch processor exports
``gen_ai.evaluation.result`` records with the OTLP log exporter, over the endpoint and protocol the
spans use (``/v1/logs`` beside ``/v1/traces``; the same host and port over gRPC). As for spans, the
exporter's retries stay quiet (DEBUG), and an exit does not wait on a collector that refuses
connections."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any, Final

from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.resources import Resource

from reach_otel._export import _QUIET, _install_quiet_filter, connection_refused
from reach_otel._safety import logger
from reach_otel.config import TRACES_PATH, Settings

__all__ = ["LOGS_PATH", "EvaluationLogs", "logs_endpoint", "make_logger_provider"]

LOGS_PATH: Final = "/v1/logs"
# Records queued for export at most; past it the SDK drops new ones (the caller never waits).
MAX_QUEUE_SIZE: Final = 2048


def logs_endpoint(settings: Settings) -> str:
    """``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`` when set (as-is, as the SDK reads it); else the spans'
    endpoint, its ``/v1/traces`` replaced by ``/v1/logs`` over HTTP, the same over gRPC."""
    explicit = os.environ.get("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "").strip()
    if explicit:
        return explicit
    endpoint = settings.endpoint
    if settings.protocol == "grpc":
        return endpoint
    base = endpoint.rstrip("/")
    return (base[: -len(TRACES_PATH)] if base.endswith(TRACES_PATH) else base) + LOGS_PATH


class _QuietLogExporter(LogRecordExporter):
    """Wraps the OTLP log exporter: its retry and failure lines go out at DEBUG, and once
    abandoned it sends nothing more."""

    def __init__(self, inner: LogRecordExporter) -> None:
        self.inner = inner
        self.failed = 0
        self._lock = threading.Lock()
        self._abandoned = False
        _install_quiet_filter(inner)

    def export(self, batch: Sequence[Any]) -> LogRecordExportResult:
        with self._lock:
            if self._abandoned:
                self.failed += len(batch)
                return LogRecordExportResult.FAILURE
        with _QUIET.during(lambda message: None):
            try:
                result = self.inner.export(batch)
            except Exception:  # an exporter that raises is one that failed
                logger.debug("reach_otel: the evaluation exporter raised", exc_info=True)
                result = LogRecordExportResult.FAILURE
        if result is not LogRecordExportResult.SUCCESS:
            with self._lock:
                self.failed += len(batch)
            logger.debug("reach_otel: %d evaluation record(s) were not exported", len(batch))
        return result

    def abandon(self) -> None:
        with self._lock:
            self._abandoned = True

    def shutdown(self) -> None:
        with _QUIET.during(lambda message: None):
            try:
                self.inner.shutdown()  # type: ignore[no-untyped-call]
            except Exception:
                logger.debug("reach_otel: evaluation exporter shutdown failed", exc_info=True)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return bool(self.inner.force_flush(timeout_millis))


class EvaluationLogs:
    """Our LoggerProvider and its exporter: what ``flush()`` and ``shutdown()`` drive."""

    def __init__(self, provider: Any, exporter: _QuietLogExporter, endpoint: str, probe: bool) -> None:
        self.provider = provider
        self.exporter = exporter
        self.endpoint = endpoint
        self._probe = probe  # an HTTP endpoint can be probed; a gRPC target is host:port

    def force_flush(self) -> bool:
        return bool(self.provider.force_flush())

    def shutdown(self) -> None:
        """Send what is queued, unless nothing listens at the endpoint (then give it up at once)."""
        if self._probe and connection_refused(self.endpoint):
            self.exporter.abandon()
        self.provider.shutdown()


def make_logger_provider(settings: Settings, resource: Resource) -> EvaluationLogs:
    """A LoggerProvider of our own (never installed globally: evaluations reach it through
    ``reach_otel.evaluations``), exporting in batches off the application's threads."""
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

    headers = dict(settings.headers) or None
    endpoint = logs_endpoint(settings)
    inner: LogRecordExporter
    if settings.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcExporter

        inner = GrpcExporter(endpoint=endpoint, insecure=endpoint.startswith("http://"), headers=headers)
    else:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpExporter

        inner = HttpExporter(endpoint=endpoint, headers=headers)
    exporter = _QuietLogExporter(inner)
    provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
    provider.add_log_record_processor(BatchLogRecordProcessor(exporter, max_queue_size=MAX_QUEUE_SIZE))
    return EvaluationLogs(provider, exporter, endpoint, probe=endpoint.startswith(("http://", "https://")))

"""The evaluation side of ``init()``: a LoggerProvider whose bounded batch processor exports
``gen_ai.evaluation.result`` records with the OTLP log exporter, over the endpoint and protocol the
spans use (``/v1/logs`` beside ``/v1/traces``; the same host and port over gRPC)."""

from __future__ import annotations

import os
from typing import Any, Final

from opentelemetry.sdk.resources import Resource

from reach_otel.config import TRACES_PATH, Settings

__all__ = ["LOGS_PATH", "logs_endpoint", "make_logger_provider"]

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


def make_logger_provider(settings: Settings, resource: Resource) -> Any:
    """A LoggerProvider of our own (never installed globally: evaluations reach it through
    ``reach_otel.evaluations``), exporting in batches off the application's threads."""
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

    headers = dict(settings.headers) or None
    endpoint = logs_endpoint(settings)
    exporter: Any
    if settings.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcExporter

        exporter = GrpcExporter(endpoint=endpoint, insecure=endpoint.startswith("http://"), headers=headers)
    else:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpExporter

        exporter = HttpExporter(endpoint=endpoint, headers=headers)
    provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
    provider.add_log_record_processor(BatchLogRecordProcessor(exporter, max_queue_size=MAX_QUEUE_SIZE))
    return provider

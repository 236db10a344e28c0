"""``init()``: provider, batching processor, OTLP exporter, and a bounded flush at exit.

It never replaces a TracerProvider the application already set: it adds its exporter to that
provider (or leaves a foreign one alone) and says which in a log line. The first call wins.
"""

from __future__ import annotations

import atexit
import threading
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import ProxyTracerProvider

from reach_otel import semconv as sc
from reach_otel._safety import logger
from reach_otel.config import Settings, load_settings
from reach_otel.handler import TelemetryHandler, set_handler


class ReachBatchSpanProcessor(BatchSpanProcessor):
    """The SDK's batching processor (bounded queue, export off the hot path) that counts drops."""

    def __init__(self, exporter: SpanExporter, **kwargs: Any) -> None:
        super().__init__(exporter, **kwargs)
        self.dropped_spans = 0

    def on_end(self, span: ReadableSpan) -> None:
        queue = getattr(getattr(self, "_batch_processor", None), "_queue", None)
        if queue is not None and queue.maxlen is not None and len(queue) >= queue.maxlen:
            self.dropped_spans += 1
        super().on_end(span)


@dataclass
class _State:
    settings: Settings
    provider: Any
    processor: SpanProcessor | None
    owns_provider: bool


_lock = threading.Lock()
_state: _State | None = None


def _make_exporter(settings: Settings) -> SpanExporter:
    headers = dict(settings.headers) or None
    if settings.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        insecure = settings.endpoint.startswith("http://")
        return GrpcExporter(endpoint=settings.endpoint, insecure=insecure, headers=headers)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter(endpoint=settings.endpoint, headers=headers)


def _resource(settings: Settings) -> Resource:
    attrs = dict(settings.resource_attributes)
    if settings.service_name:
        attrs[sc.SERVICE_NAME] = settings.service_name
    return Resource.create(attrs)  # merges OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME


def init(
    service_name: str | None = None,
    *,
    endpoint: str | None = None,
    headers: dict[str, str] | None = None,
    protocol: str | None = None,
    capture_content: bool | None = None,
    content_max_chars: int | None = None,
    redact_patterns: list[str] | None = None,
    max_hops: int | None = None,
    on_loop: str | None = None,
    shutdown_timeout: float | None = None,
    resource_attributes: dict[str, Any] | None = None,
    tracer_provider: Any = None,
    exporter: SpanExporter | None = None,
    instrument: bool | None = None,
) -> Any:
    """Set up tracing for this process; returns the TracerProvider spans go to (None if disabled).

    Keyword arguments win over the standard ``OTEL_*`` variables, which win over the defaults
    (OTLP over HTTP/protobuf to ``http://127.0.0.1:4318``). Calling it again is harmless.
    The first call also applies the instrumentors of the installed libraries, each when its
    library is imported (``instrument=False`` or ``REACH_OTEL_INSTRUMENT=false``: none).
    """
    global _state
    settings = load_settings(
        service_name=service_name,
        endpoint=endpoint,
        headers=headers,
        protocol=protocol,
        capture_content=capture_content,
        content_max_chars=content_max_chars,
        redact_patterns=redact_patterns,
        max_hops=max_hops,
        on_loop=on_loop,
        shutdown_timeout=shutdown_timeout,
        resource_attributes=resource_attributes,
    )
    with _lock:
        if _state is not None:
            if settings.comparable() != _state.settings.comparable():
                logger.warning("reach_otel: init() was already called; keeping the first call's settings")
            return _state.provider
        try:
            _state = _setup(settings, tracer_provider, exporter)
        except Exception:  # telemetry must never take the application down
            logger.warning("reach_otel: init() failed; spans will not be exported", exc_info=True)
            _state = _State(settings, None, None, owns_provider=False)
            set_handler(TelemetryHandler(settings=settings))
            return None
        atexit.register(shutdown)
        provider = _state.provider
    _instrument_libraries(instrument, settings)
    return provider


def _instrument_libraries(wanted: bool | None, settings: Settings) -> None:
    """The instrumentors ``init()`` applies (outside its lock: applying one imports its library)."""
    from reach_otel.config import env_bool
    from reach_otel.instrumentation import auto_instrument

    if settings.disabled or not (env_bool("REACH_OTEL_INSTRUMENT", True) if wanted is None else wanted):
        return
    try:
        auto_instrument()
    except Exception:  # the application runs regardless
        logger.warning("reach_otel: init() could not apply the instrumentors", exc_info=True)


def _setup(settings: Settings, explicit_provider: Any, exporter: SpanExporter | None) -> _State:
    if settings.disabled:
        logger.info("reach_otel: OTEL_SDK_DISABLED is set; no provider or exporter was configured")
        set_handler(TelemetryHandler(tracer_provider=explicit_provider, settings=settings))
        return _State(settings, explicit_provider, None, owns_provider=False)

    provider = explicit_provider or trace.get_tracer_provider()
    owns = False
    if explicit_provider is None and isinstance(provider, ProxyTracerProvider):
        provider = TracerProvider(resource=_resource(settings), shutdown_on_exit=False)
        trace.set_tracer_provider(provider)
        owns = True
    processor: SpanProcessor | None = None
    if hasattr(provider, "add_span_processor"):
        processor = ReachBatchSpanProcessor(exporter or _make_exporter(settings))
        provider.add_span_processor(processor)
        where = "a new TracerProvider" if owns else "the application's existing TracerProvider"
        logger.info(
            "reach_otel: exporting spans to %s (%s) via %s", settings.endpoint, settings.protocol, where
        )
    else:
        logger.info(
            "reach_otel: the application's TracerProvider (%s) takes no processors; left it alone",
            type(provider).__name__,
        )
    set_handler(TelemetryHandler(tracer_provider=explicit_provider, settings=settings))
    return _State(settings, provider, processor, owns_provider=owns)


def _bounded(action: Any, timeout_s: float) -> bool:
    """Run ``action`` in a daemon thread; give up after ``timeout_s`` so exit never hangs."""
    done = threading.Event()

    def run() -> None:
        try:
            action()
        except Exception:  # flushing is best effort
            logger.debug("reach_otel: flush/shutdown failed", exc_info=True)
        finally:
            done.set()

    threading.Thread(target=run, name="reach-otel-shutdown", daemon=True).start()
    finished = done.wait(timeout_s)
    if not finished:
        logger.warning("reach_otel: span export did not finish within %.1fs; giving up", timeout_s)
    return finished


def flush(timeout: float | None = None) -> bool:
    """Export what is queued now; returns False when it did not finish within the timeout."""
    state = _state
    if state is None or state.processor is None:
        return True
    processor = state.processor
    return _bounded(processor.force_flush, state.settings.shutdown_timeout_s if timeout is None else timeout)


def shutdown(timeout: float | None = None) -> bool:
    """Flush and stop exporting (also run at exit); bounded by ``REACH_OTEL_SHUTDOWN_TIMEOUT``."""
    state = _state
    if state is None or state.processor is None:
        return True
    target = state.provider if state.owns_provider else state.processor
    state.processor = None
    return _bounded(target.shutdown, state.settings.shutdown_timeout_s if timeout is None else timeout)


def dropped_spans() -> int:
    """Spans dropped because the export queue was full (the collector down or slow)."""
    state = _state
    processor = state.processor if state is not None else None
    return processor.dropped_spans if isinstance(processor, ReachBatchSpanProcessor) else 0

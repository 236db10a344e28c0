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
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter
from opentelemetry.trace import ProxyTracerProvider

from reach_otel import semconv as sc
from reach_otel._export import CountingExporter, ReachBatchSpanProcessor
from reach_otel._log_export import make_logger_provider
from reach_otel._safety import logger
from reach_otel._session_stamp import SessionAttributes
from reach_otel.config import Settings, load_settings
from reach_otel.evaluations import set_logger_provider
from reach_otel.handler import TelemetryHandler, set_handler


@dataclass
class _State:
    settings: Settings
    provider: Any
    processor: SpanProcessor | None
    owns_provider: bool
    stopped: bool = False
    logs: Any = None  # the LoggerProvider evaluations go to (reach_otel.evaluations), when ours


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
        # An exporter of the application's own is not ours to probe: the endpoint settings are not its.
        if exporter is None:
            counting = CountingExporter(_make_exporter(settings), settings.endpoint)
            sends_to = f"{settings.endpoint} ({settings.protocol})"
        else:
            counting = CountingExporter(exporter, None)
            sends_to = f"the application's {type(exporter).__name__}"
        processor = ReachBatchSpanProcessor(counting)
        provider.add_span_processor(SessionAttributes())  # before export: it runs as spans start
        provider.add_span_processor(processor)
        where = "a new TracerProvider" if owns else "the application's existing TracerProvider"
        logger.info("reach_otel: exporting spans to %s via %s", sends_to, where)
    else:
        logger.info(
            "reach_otel: the application's TracerProvider (%s) takes no processors; left it alone",
            type(provider).__name__,
        )
    # With an exporter of the application's own, evaluations go where its global LoggerProvider says.
    logs = _evaluation_logs(settings) if exporter is None else None
    set_handler(TelemetryHandler(tracer_provider=explicit_provider, settings=settings))
    return _State(settings, provider, processor, owns_provider=owns, logs=logs)


def _evaluation_logs(settings: Settings) -> Any:
    """Our LoggerProvider for ``evaluate()``/``feedback()``, exporting beside the spans; None (and
    evaluations go to the application's global one) when it cannot be made."""
    try:
        logs = make_logger_provider(settings, _resource(settings))
    except Exception:  # the application runs regardless; its spans are still exported
        logger.warning("reach_otel: could not set up the evaluation log exporter", exc_info=True)
        return None
    set_logger_provider(logs.provider)
    return logs


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
    return done.wait(timeout_s)


def flush(timeout: float | None = None) -> bool:
    """Export what is queued now; False when it did not finish within the timeout, or the collector
    refuses connections (then the spans stay queued)."""
    state = _state
    if state is None or state.processor is None or state.stopped:
        return True
    processor = state.processor
    finished = [False]
    logs = state.logs

    def run() -> None:
        finished[0] = bool(processor.force_flush())
        if logs is not None:
            finished[0] = bool(logs.force_flush()) and finished[0]

    timeout_s = state.settings.shutdown_timeout_s if timeout is None else timeout
    if not _bounded(run, timeout_s):
        logger.debug("reach_otel: flush did not finish within %.1fs", timeout_s)
        return False
    return finished[0]


def shutdown(timeout: float | None = None) -> bool:
    """Flush and stop exporting (also run at exit), within ``REACH_OTEL_SHUTDOWN_TIMEOUT`` at most;
    a collector that refuses connections is not waited for."""
    state = _state
    if state is None or state.processor is None or state.stopped:
        return True
    state.stopped = True
    processor = state.processor
    target = state.provider if state.owns_provider else processor
    timeout_s = state.settings.shutdown_timeout_s if timeout is None else timeout
    logs = state.logs

    def stop() -> None:
        try:
            target.shutdown()
        finally:
            if logs is not None:  # within the same bound: evaluations queued are sent, or given up
                logs.shutdown()

    finished = _bounded(stop, timeout_s)
    if not finished and isinstance(processor, ReachBatchSpanProcessor):
        processor.give_up(timeout_s)
    return finished and not (isinstance(processor, ReachBatchSpanProcessor) and processor.exporter.abandoned)


def dropped_spans() -> int:
    """Spans that were not delivered: dropped from a full queue or lost in a failed export."""
    state = _state
    processor = state.processor if state is not None else None
    return processor.dropped if isinstance(processor, ReachBatchSpanProcessor) else 0

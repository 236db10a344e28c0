"""Which tracer a benchmark worker runs under, and the exporter every tracer's spans go to.

Tracers: ``none`` (no TracerProvider, nothing instrumented: the baseline), ``sdk`` (a TracerProvider
and nothing instrumented: what a framework that traces itself — the MCP SDK 2.x does — records on
its own), ``reach`` (reach_otel's instrumentors), ``openinference`` and ``openllmetry`` (the
peers' instrumentations of the same framework). Every tracer but ``none`` gets the same
TracerProvider: a BatchSpanProcessor in front of :class:`Capture`, which keeps spans only while a
probe asks for them and otherwise just counts them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

TRACERS = ("none", "sdk", "reach", "openinference", "openllmetry")
#: A tracer name may end in ``:content`` or ``:nocontent``: prompts, completions and inputs/outputs
#: recorded or not, against each tracer's default (ours off, the peers' on).
_OPENINFERENCE_HIDE = (
    "OPENINFERENCE_HIDE_INPUTS",
    "OPENINFERENCE_HIDE_OUTPUTS",
    "OPENINFERENCE_HIDE_INPUT_MESSAGES",
    "OPENINFERENCE_HIDE_OUTPUT_MESSAGES",
    "OPENINFERENCE_HIDE_INPUT_TEXT",
    "OPENINFERENCE_HIDE_OUTPUT_TEXT",
)


class Capture(SpanExporter):
    """Counts every span; keeps them, as plain dicts, between :meth:`keep` and :meth:`take`."""

    def __init__(self) -> None:
        self.exported = 0
        self._kept: list[dict[str, Any]] | None = None
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock:
            self.exported += len(spans)
            if self._kept is not None:
                self._kept.extend(as_dict(span) for span in spans)
        return SpanExportResult.SUCCESS

    def keep(self) -> None:
        with self._lock:
            self._kept = []

    def take(self) -> list[dict[str, Any]]:
        with self._lock:
            kept, self._kept = self._kept or [], None
        return kept


def as_dict(span: ReadableSpan) -> dict[str, Any]:
    ctx = span.context
    parent = span.parent
    return {
        "name": span.name,
        "trace_id": format(ctx.trace_id, "032x") if ctx else "",
        "span_id": format(ctx.span_id, "016x") if ctx else "",
        "parent_id": format(parent.span_id, "016x") if parent else None,
        "kind": span.kind.name,
        "start": span.start_time,
        "attributes": {k: _plain(v) for k, v in (span.attributes or {}).items()},
        "events": [event.name for event in span.events],
        "links": len(span.links),
    }


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _content(tracer: str, mode: str) -> None:
    """Set the peers' own switches for content (read from the environment when they record)."""
    if not mode:
        return
    on = mode == "content"
    if tracer == "openinference":
        os.environ.update({key: "false" if on else "true" for key in _OPENINFERENCE_HIDE})
    elif tracer == "openllmetry":
        os.environ["TRACELOOP_TRACE_CONTENT"] = "true" if on else "false"
    elif tracer == "reach":
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true" if on else "false"


def _reach(framework: str, provider: TracerProvider) -> None:
    from reach_otel.config import load_settings
    from reach_otel.handler import TelemetryHandler, set_handler

    set_handler(TelemetryHandler(tracer_provider=provider, settings=load_settings()))
    if framework == "langgraph":
        from reach_otel.instrumentation.langgraph import LangGraphInstrumentor

        LangGraphInstrumentor().instrument()
    elif framework == "crewai":
        from reach_otel.instrumentation.crewai import CrewAIInstrumentor
        from reach_otel.instrumentation.openai import OpenAIInstrumentor

        CrewAIInstrumentor().instrument()
        OpenAIInstrumentor().instrument()
    elif framework == "mcp":
        from reach_otel.instrumentation.mcp import MCPInstrumentor

        MCPInstrumentor().instrument()
    elif framework == "a2a":
        from reach_otel.instrumentation.a2a import A2AInstrumentor

        A2AInstrumentor().instrument()


def _openinference(framework: str, provider: TracerProvider) -> None:
    if framework == "langgraph":
        from openinference.instrumentation.langchain import LangChainInstrumentor

        LangChainInstrumentor().instrument(tracer_provider=provider)
    elif framework == "crewai":
        from openinference.instrumentation.crewai import CrewAIInstrumentor
        from openinference.instrumentation.openai import OpenAIInstrumentor

        CrewAIInstrumentor().instrument(tracer_provider=provider)
        OpenAIInstrumentor().instrument(tracer_provider=provider)
    elif framework == "mcp":
        from openinference.instrumentation.mcp import MCPInstrumentor

        MCPInstrumentor().instrument(tracer_provider=provider)
    elif framework == "a2a":
        raise LookupError("OpenInference has no A2A instrumentation")


def _openllmetry(framework: str, provider: TracerProvider) -> None:
    if framework == "langgraph":
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor

        LangchainInstrumentor().instrument(tracer_provider=provider)
    elif framework == "crewai":
        from opentelemetry.instrumentation.crewai import CrewAIInstrumentor
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor

        CrewAIInstrumentor().instrument(tracer_provider=provider)
        OpenAIInstrumentor().instrument(tracer_provider=provider)
    elif framework == "mcp":
        from opentelemetry.instrumentation.mcp import McpInstrumentor

        McpInstrumentor().instrument(tracer_provider=provider)
    elif framework == "a2a":
        raise LookupError("OpenLLMetry has no A2A instrumentation")


def _applied() -> list[str]:
    """Instrumentors whose ``instrument()`` declined (BaseInstrumentor only logs a version conflict)."""
    from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

    declined = []
    for cls in _subclasses(BaseInstrumentor):
        instance = cls.__dict__.get("_instance")  # BaseInstrumentor keeps one instance per class
        if instance is not None and not instance.is_instrumented_by_opentelemetry:
            conflict = instance._check_dependency_conflicts()
            declined.append(f"{cls.__name__}: {conflict}" if conflict else cls.__name__)
    return declined


def _subclasses(cls: type) -> list[type]:
    out: list[type] = []
    subs: list[type] = type.__subclasses__(cls)
    for sub in subs:
        out += [sub, *_subclasses(sub)]
    return out


_APPLY: dict[str, Callable[[str, TracerProvider], None]] = {
    "sdk": lambda framework, provider: None,
    "reach": _reach,
    "openinference": _openinference,
    "openllmetry": _openllmetry,
}


def setup(tracer: str, framework: str) -> tuple[TracerProvider | None, Capture | None, str | None]:
    """(provider, capture, why instrumenting failed or None) for ``tracer`` on ``framework``."""
    tracer, _, mode = tracer.partition(":")
    if tracer == "none":
        return None, None, None
    _content(tracer, mode)
    capture = Capture()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(capture, max_queue_size=65_536))
    trace.set_tracer_provider(provider)
    try:
        _APPLY[tracer](framework, provider)
    except Exception as exc:  # a peer that cannot instrument this version: recorded, not fatal
        return provider, capture, f"{type(exc).__name__}: {exc}"
    declined = _applied()
    return provider, capture, ("declined: " + "; ".join(declined)) if declined else None

"""OpenAI Agents SDK integration: a tracing processor that maps the SDK's spans onto reach_otel's.

``OpenAIAgentsInstrumentor().instrument()`` adds the processor with ``agents.add_trace_processor``
next to the user's own processors (never replacing them). The SDK has no way to remove a
processor, so ``uninstrument()`` makes ours inert and a later ``instrument()`` revives it.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

from reach_otel._safety import guarded
from reach_otel.instrumentation._base import handler_ref
from reach_otel.instrumentation.openai_agents.package import _instruments
from reach_otel.instrumentation.openai_agents.processor import (
    ReachTracingProcessor,
    openai_instrumentation_active,
)


def _registered(processor: ReachTracingProcessor) -> bool:
    """Whether the SDK still holds our processor (the app may have called set_trace_processors)."""
    from agents.tracing import get_trace_provider

    multi = getattr(get_trace_provider(), "_multi_processor", None)
    processors = getattr(multi, "_processors", None)
    return processors is None or processor in processors  # unknown layout: assume it is there


class OpenAIAgentsInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Map OpenAI Agents SDK traces onto agent, chat, tool and handoff spans."""

    _processor: ReachTracingProcessor | None = None

    @property
    def processor(self) -> ReachTracingProcessor | None:
        return self._processor

    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        ref = handler_ref(kwargs.get("tracer_provider"))
        with guarded("openai_agents.instrument"):
            from agents import add_trace_processor

            processor = OpenAIAgentsInstrumentor._processor
            if processor is not None and _registered(processor):
                processor.activate(ref)
                return
            processor = ReachTracingProcessor(ref)
            add_trace_processor(processor)
            OpenAIAgentsInstrumentor._processor = processor

    def _uninstrument(self, **kwargs: Any) -> None:
        if OpenAIAgentsInstrumentor._processor is not None:
            OpenAIAgentsInstrumentor._processor.deactivate()


__all__ = ["OpenAIAgentsInstrumentor", "ReachTracingProcessor", "openai_instrumentation_active"]

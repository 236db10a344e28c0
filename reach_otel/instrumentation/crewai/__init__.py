"""CrewAI integration: rides CrewAI's own hooks, no monkeypatching.

Two of them. The ``execution_start`` / ``execution_end`` interception points
(``crewai.hooks.dispatch``), which CrewAI calls synchronously at the start and the end of every crew
kickoff and every flow kickoff (the end also when the kickoff fails): they open and close the
workflow span — a flow's, with the crews it kicks off nested under it. And an event
stream sink (``crewai.events.stream_context``), added in the kickoff's context at its start, which
CrewAI's event bus calls synchronously, in the emitting thread, with every event of that kickoff:
agent, tool, delegation and LLM events become spans there (see
:mod:`reach_otel.instrumentation.crewai.listener`). Not the bus's ``on()`` handlers: the bus runs
those later on a thread pool, where no span can be made current for the model call or the tool run
that follows, so nothing under them would nest.

``uninstrument()`` unregisters both hooks; a kickoff already running still ends its spans.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

from reach_otel._safety import guarded
from reach_otel.instrumentation._base import handler_ref
from reach_otel.instrumentation.crewai.package import _instruments


class CrewAIInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Map CrewAI crew kickoffs onto workflow, agent, chat, tool and handoff spans."""

    _listener: Any = None

    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        ref = handler_ref(kwargs.get("tracer_provider"))
        with guarded("crewai.instrument"):
            from reach_otel.instrumentation.crewai.listener import CrewListener

            listener = CrewListener(ref)
            listener.register()
            CrewAIInstrumentor._listener = listener

    def _uninstrument(self, **kwargs: Any) -> None:
        listener, CrewAIInstrumentor._listener = CrewAIInstrumentor._listener, None
        if listener is not None:
            with guarded("crewai.uninstrument"):
                listener.unregister()


__all__ = ["CrewAIInstrumentor"]

"""LangGraph integration: a LangChain callback handler, added to every run through langchain-core's
own configure hook (``register_configure_hook``) — a framework hook — and one wrap where no hook
reaches: LangGraph's ``RunnableCallable.invoke`` / ``ainvoke``, which run a node's function, so
that the node's span (or the span it runs under) is current from the function's first line and
whatever the node does — an MCP session, an HTTP call, a query — is in its request's trace
(:mod:`.bodies` says why callbacks cannot).

A graph invocation is the workflow (``invoke_workflow {graph}``), its agent nodes ``invoke_agent``
spans, chat models ``chat`` spans (made by reach_otel's OpenAI instrumentation when that is applied
and the model is an OpenAI one, else here), tools ``execute_tool`` spans, and moves of control
between agents ``handoff {target}`` spans with hop count and loop detection. Which nodes are
agents: see :mod:`reach_otel.instrumentation.langgraph.agents`. ``uninstrument()`` removes the hook
and the wrap and makes the handler inert (runs already under way still end their spans).
"""

from __future__ import annotations

from collections.abc import Collection
from contextvars import ContextVar
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from reach_otel._safety import guarded
from reach_otel.instrumentation._base import handler_ref
from reach_otel.instrumentation.langgraph import bodies
from reach_otel.instrumentation.langgraph.callback import LangGraphCallbackHandler
from reach_otel.instrumentation.langgraph.package import _instruments

_RUNNABLE = "langgraph._internal._runnable"


def _code_context(runnable: Any, config: Any) -> otel_context.Context | None:
    handler = LangGraphInstrumentor._handler
    return handler.context_for_code(runnable, config) if handler is not None else None


def _hooks() -> list[Any]:
    from langchain_core.tracers import context

    return context._configure_hooks  # the list register_configure_hook appends to


class LangGraphInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Trace LangGraph graphs (and langgraph-supervisor / langgraph-swarm) through its callbacks, with
    a node's span current in the node's own code."""

    _handler: LangGraphCallbackHandler | None = None
    _var: ContextVar[LangGraphCallbackHandler | None] | None = None

    @property
    def handler(self) -> LangGraphCallbackHandler | None:
        return LangGraphInstrumentor._handler

    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        ref = handler_ref(kwargs.get("tracer_provider"))
        with guarded("langgraph.instrument"):
            from langchain_core.tracers.context import register_configure_hook

            cls = LangGraphInstrumentor
            if cls._handler is None or cls._var is None:
                cls._handler = LangGraphCallbackHandler(ref)
                # The default is what every Context sees: each configured run gets the handler.
                cls._var = ContextVar("reach_otel_langgraph", default=cls._handler)
            cls._handler.activate(ref)
            if not any(hook[0] is cls._var for hook in _hooks()):
                register_configure_hook(cls._var, True)
        with guarded("langgraph.instrument node code"):
            wrap_function_wrapper(_RUNNABLE, "RunnableCallable.invoke", bodies.invoke_wrapper(_code_context))
            wrap_function_wrapper(
                _RUNNABLE, "RunnableCallable.ainvoke", bodies.ainvoke_wrapper(_code_context)
            )

    def _uninstrument(self, **kwargs: Any) -> None:
        cls = LangGraphInstrumentor
        with guarded("langgraph.uninstrument"):
            hooks = _hooks()
            hooks[:] = [hook for hook in hooks if hook[0] is not cls._var]
        with guarded("langgraph.uninstrument node code"):
            from langgraph._internal._runnable import RunnableCallable

            unwrap(RunnableCallable, "invoke")
            unwrap(RunnableCallable, "ainvoke")
        if cls._handler is not None:
            cls._handler.deactivate()


__all__ = ["LangGraphCallbackHandler", "LangGraphInstrumentor"]

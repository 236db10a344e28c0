"""Where a node's own code runs: LangGraph's ``RunnableCallable.invoke`` / ``ainvoke``, wrapped so
that the node's span, or the span the node runs under, is current from the function's first line
to its last.

Callbacks cannot do this on their own. An async callback manager reports a node's start in the
Context of the task that awaits the graph and its end in a shielded copy, so nothing attached at
the start could be undone there. LangGraph then runs the node's function in a Context of its own
(where it sets LangSmith's parent run); this wrapper attaches inside that call and detaches when
the call returns, in the same Context.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry import context as otel_context

from reach_otel._safety import logger
from reach_otel.errors import HopLimitExceeded
from reach_otel.instrumentation.langgraph.activation import enter, reset

#: (the RunnableCallable, its config) → the context its function runs in, or None (unknown run).
Resolve = Callable[[Any, Any], "otel_context.Context | None"]
Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]


def _enter(resolve: Resolve, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> object | None:
    config = args[1] if len(args) > 1 else kwargs.get("config")
    try:
        return enter(resolve(instance, config))
    except HopLimitExceeded:  # the node would start an agent past the limit, and the app asked to stop
        raise
    except Exception:  # telemetry must never raise into user code
        logger.debug("reach_otel: langgraph node context failed", exc_info=True)
        return None


def invoke_wrapper(resolve: Resolve) -> Wrapper:
    """``RunnableCallable.invoke(input, config)``: the function runs with its run's context current."""

    def invoke(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        token = _enter(resolve, instance, args, kwargs)
        try:
            return wrapped(*args, **kwargs)
        finally:
            reset(token)

    return invoke


def ainvoke_wrapper(resolve: Resolve) -> Wrapper:
    """``RunnableCallable.ainvoke(input, config)``, likewise; a sync function it sends to an executor
    inherits the context with the rest of the Context."""

    async def ainvoke(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        token = _enter(resolve, instance, args, kwargs)
        try:
            return await wrapped(*args, **kwargs)
        finally:
            reset(token)

    return ainvoke

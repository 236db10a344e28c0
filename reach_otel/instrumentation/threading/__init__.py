"""Threads keep the caller's context: ``ThreadPoolExecutor.submit`` and ``threading.Thread``.

The context captured is OpenTelemetry's, which also holds reach_otel's current agent and session,
so a tool called from a worker thread nests under the agent that submitted it.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import threading
from collections.abc import Callable, Collection
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from reach_otel.instrumentation.threading.package import _instruments


def _bind(fn: Callable[..., Any], ctx: otel_context.Context) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        token = otel_context.attach(ctx)
        try:
            return fn(*args, **kwargs)
        finally:
            otel_context.detach(token)

    return run


def _submit(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if not args:
        return wrapped(*args, **kwargs)
    return wrapped(_bind(args[0], otel_context.get_current()), *args[1:], **kwargs)


def _start(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    # Bind this thread's run (a subclass's override too) to the starter's context; a Thread
    # subclass with __slots__ cannot take it and simply runs without.
    with contextlib.suppress(Exception):
        instance.run = _bind(instance.run, otel_context.get_current())
    return wrapped(*args, **kwargs)


class ThreadingInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        wrap_function_wrapper("concurrent.futures", "ThreadPoolExecutor.submit", _submit)
        wrap_function_wrapper("threading", "Thread.start", _start)

    def _uninstrument(self, **kwargs: Any) -> None:
        unwrap(concurrent.futures.ThreadPoolExecutor, "submit")
        unwrap(threading.Thread, "start")


__all__ = ["ThreadingInstrumentor"]

"""A2A instrumentation (the ``a2a-sdk`` package, client and server).

The SDK's own tracing (``a2a.utils.telemetry``) decorates its classes at import with a span per
method; there is no hook to add to, so its places are taken (:mod:`.sdk`): while instrumented, the
decorated transport methods are our CLIENT spans (and a message an agent sends, a handoff), the
decorated request-handler methods our SERVER spans, and every other decorated method runs without
a span. The request handler's constructor is wrapped so the agent's work is an ``invoke_agent``
span. Each SDK module is patched when the application imports it (a client never loads the
server's modules for us); ``uninstrument()`` puts every method back as the SDK made it.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Collection
from typing import Any

import wrapt
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from reach_otel._safety import safe
from reach_otel.instrumentation._base import HandlerRef, handler_ref
from reach_otel.instrumentation.a2a import client, executor, extract, sdk, server
from reach_otel.instrumentation.a2a.package import _instruments

_patched: list[tuple[Any, str]] = []
_generation = 0  # a module imported after uninstrument() is left alone by the earlier hooks


def _wrapper(ref: HandlerRef, module: str, name: str) -> sdk.Wrapper:
    """Ours for an A2A request method of a transport or request handler, else a plain pass-through."""
    if module in sdk.TRANSPORTS and name in extract.CLIENT_METHODS:
        method = extract.CLIENT_METHODS[name]
        return (client.stream_wrapper if method in extract.STREAMS else client.call_wrapper)(ref, method)
    if module in sdk.HANDLERS and name in extract.SERVER_METHODS:
        method = extract.SERVER_METHODS[name]
        return (server.stream_wrapper if method in extract.STREAMS else server.call_wrapper)(ref, method)
    return sdk.passthrough()


@safe
def _patch(ref: HandlerRef, generation: int, module: types.ModuleType) -> None:
    """Take the places of the SDK's span wrappers in one module, once it is imported."""
    if generation != _generation:
        return
    for owner, name in sdk.traced_in(module):
        wrap_function_wrapper(owner, name, _wrapper(ref, module.__name__, name))
        _patched.append((owner, name))
    handler_class = sdk.HANDLERS.get(module.__name__)
    if handler_class is not None:
        wrap_function_wrapper(module, f"{handler_class}.__init__", executor.init_wrapper(ref))
        _patched.append((getattr(module, handler_class), "__init__"))


class A2AInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        global _generation
        _generation += 1
        ref = handler_ref(kwargs.get("tracer_provider"))
        executor.set_active(True)
        for name in sdk.MODULES:  # at once for a module already imported
            wrapt.register_post_import_hook(functools.partial(_patch, ref, _generation), name)

    def _uninstrument(self, **kwargs: Any) -> None:
        global _generation
        _generation += 1
        executor.set_active(False)
        while _patched:
            owner, name = _patched.pop()
            unwrap(owner, name)


__all__ = ["A2AInstrumentor"]

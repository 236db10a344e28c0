"""A2A instrumentation (the ``a2a-sdk`` package, client and server).

The SDK's own tracing (``a2a.utils.telemetry``) decorates its classes at import with a span per
method; there is no hook to add to, so its places are taken (:mod:`.sdk`): while instrumented, the
decorated transport methods are our CLIENT spans (and a message an agent sends, a handoff), the
decorated request-handler methods our SERVER spans, and every other decorated method runs without
a span. The request handler's constructor is wrapped so the agent's work is an ``invoke_agent``
span. ``uninstrument()`` puts every method back as the SDK made it.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from reach_otel.instrumentation._base import HandlerRef, handler_ref
from reach_otel.instrumentation.a2a import client, executor, extract, sdk, server
from reach_otel.instrumentation.a2a.package import _instruments

_HANDLERS = (
    ("a2a.server.request_handlers.default_request_handler_v2", "DefaultRequestHandlerV2"),
    ("a2a.server.request_handlers.default_request_handler", "LegacyRequestHandler"),
)
_patched: list[tuple[Any, str]] = []


def _wrapper(ref: HandlerRef, owner: Any, name: str) -> sdk.Wrapper:
    """Ours for an A2A request method of a transport or request handler, else a plain pass-through."""
    from a2a.client.transports.base import ClientTransport
    from a2a.server.request_handlers.request_handler import RequestHandler

    if isinstance(owner, type) and issubclass(owner, ClientTransport) and name in extract.CLIENT_METHODS:
        method = extract.CLIENT_METHODS[name]
        factory = client.stream_wrapper if method in extract.STREAMS else client.call_wrapper
        return factory(ref, method)
    if isinstance(owner, type) and issubclass(owner, RequestHandler) and name in extract.SERVER_METHODS:
        method = extract.SERVER_METHODS[name]
        factory = server.stream_wrapper if method in extract.STREAMS else server.call_wrapper
        return factory(ref, method)
    return sdk.passthrough()


class A2AInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        ref = handler_ref(kwargs.get("tracer_provider"))
        for module, owner, name in list(sdk.targets()):
            path = name if owner is module else f"{owner.__name__}.{name}"
            wrap_function_wrapper(module, path, _wrapper(ref, owner, name))
            _patched.append((owner, name))
        for module_name, cls in _HANDLERS:
            wrap_function_wrapper(module_name, f"{cls}.__init__", executor.init_wrapper(ref))
        executor.set_active(True)

    def _uninstrument(self, **kwargs: Any) -> None:
        import importlib

        executor.set_active(False)
        for module_name, cls in _HANDLERS:
            unwrap(getattr(importlib.import_module(module_name), cls), "__init__")
        while _patched:
            owner, name = _patched.pop()
            unwrap(owner, name)


__all__ = ["A2AInstrumentor"]

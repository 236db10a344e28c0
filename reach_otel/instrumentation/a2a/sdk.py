"""The SDK's own telemetry (``a2a.utils.telemetry``) and how its places are taken.

At import the SDK decorates its transports, request handlers, dispatchers, event queues and task
manager with ``trace_class`` / ``trace_function``: every method a span from the global tracer,
named after its Python qualname, the queues' as SERVER spans (some fifty per request). There is no
hook to add to — no callback, attributes fixed at import — so while instrumented each decorated
method runs undecorated: the A2A request methods under our span, the rest plainly. Uninstrument
puts the SDK's decorated methods back.
"""

from __future__ import annotations

import importlib
import inspect
import types
from collections.abc import Callable, Iterator
from typing import Any

from a2a.utils import telemetry

from reach_otel._safety import logger

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]

#: The SDK modules that use its tracing decorators, by what they hold: client transports, request
#: handlers, and the rest (dispatchers, queues, the task manager). One this version lacks is skipped.
TRANSPORTS: tuple[str, ...] = (
    "a2a.client.transports.jsonrpc",
    "a2a.client.transports.rest",
    "a2a.client.transports.grpc",
    "a2a.compat.v0_3.jsonrpc_transport",
    "a2a.compat.v0_3.rest_transport",
    "a2a.compat.v0_3.grpc_transport",
)
HANDLERS: dict[str, str] = {  # module → its request handler class (whose constructor meets the executor)
    "a2a.server.request_handlers.default_request_handler_v2": "DefaultRequestHandlerV2",
    "a2a.server.request_handlers.default_request_handler": "LegacyRequestHandler",
}
INTERNALS: tuple[str, ...] = (
    "a2a.compat.v0_3.rest_handler",
    "a2a.server.routes.jsonrpc_dispatcher",
    "a2a.server.routes.rest_dispatcher",
    "a2a.server.events.event_queue",
    "a2a.server.events.event_queue_v2",
    "a2a.server.events.event_consumer",
    "a2a.server.events.in_memory_queue_manager",
    "a2a.server.tasks.task_manager",
)
MODULES: tuple[str, ...] = (*TRANSPORTS, *HANDLERS, *INTERNALS)


def _wrapper_codes() -> frozenset[types.CodeType]:
    """The code objects of the SDK's span wrappers (one sync, one async), whatever they wrap."""

    def plain() -> None:
        return None

    async def coroutine() -> None:
        return None

    return frozenset(telemetry.trace_function(fn).__code__ for fn in (plain, coroutine))


_CODES = _wrapper_codes()


def is_sdk_traced(fn: Any) -> bool:
    """True for a function (or bound method) that is the SDK's span wrapper."""
    func = getattr(fn, "__func__", fn)
    return getattr(func, "__code__", None) in _CODES and hasattr(func, "__wrapped__")


def undecorated(wrapped: Any) -> Any:
    """``wrapped`` without the SDK's span wrapper (bound again when it was a bound method)."""
    if not is_sdk_traced(wrapped):
        return wrapped
    inner = getattr(wrapped, "__func__", wrapped).__wrapped__
    owner = getattr(wrapped, "__self__", None)
    return inner if owner is None else types.MethodType(inner, owner)


def _module(name: str) -> types.ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:  # an optional part of the SDK (gRPC) or one this version does not have
        logger.debug("reach_otel: a2a module %s not importable", name, exc_info=True)
        return None


def traced_in(module: types.ModuleType) -> Iterator[tuple[Any, str]]:
    """(owner, attribute) of every SDK span wrapper a module defines: its classes' methods, its functions."""
    name = module.__name__
    for attr, value in list(vars(module).items()):
        if is_sdk_traced(value) and getattr(value, "__module__", None) == name:
            yield module, attr
        elif inspect.isclass(value) and value.__module__ == name:
            for method, fn in list(vars(value).items()):
                if is_sdk_traced(fn):
                    yield value, method


def targets() -> Iterator[tuple[types.ModuleType, Any, str]]:
    """(module, owner, attribute) of every SDK span wrapper in the modules this SDK has (imports them)."""
    for name in MODULES:
        module = _module(name)
        if module is not None:
            for owner, attr in traced_in(module):
                yield module, owner, attr


def passthrough() -> Wrapper:
    """A decorated SDK method, run undecorated: no SDK span."""

    def call(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        return undecorated(wrapped)(*args, **kwargs)

    return call

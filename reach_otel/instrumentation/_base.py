"""What every reach_otel instrumentor shares: which handler its wrappers report to."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reach_otel.handler import TelemetryHandler, get_handler

HandlerRef = Callable[[], TelemetryHandler]


def handler_ref(tracer_provider: Any = None) -> HandlerRef:
    """The handler a wrapper uses at call time.

    Without an explicit ``tracer_provider`` it is the default handler *at call time*, so ``init()``
    called after ``instrument()`` still applies. With one, a handler bound to that provider that
    shares the default handler's settings and per-request hop state.
    """
    if tracer_provider is None:
        return get_handler
    default = get_handler()
    bound = TelemetryHandler(tracer_provider=tracer_provider, settings=default.settings, hops=default.hops)
    return lambda: bound

"""Carry the current trace, agent and session into threads and callbacks.

asyncio tasks inherit the context by themselves; a thread does not. ``wrap(fn)`` captures the
context now and runs ``fn`` inside it later, wherever it is called from.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def wrap(fn: Callable[P, R]) -> Callable[P, R]:
    """Return ``fn`` bound to the current context (trace, agent, session, baggage)."""
    captured = contextvars.copy_context()

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        # A Context can be entered by one thread at a time: run a fresh copy each call.
        return captured.copy().run(fn, *args, **kwargs)

    return run

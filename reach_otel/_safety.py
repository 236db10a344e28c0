"""The one broad ``except`` in the library: telemetry failures are logged at DEBUG and swallowed.

Everything reach_otel does on behalf of the user's call goes through :func:`safe` or
:func:`guarded`, so a bug in telemetry can never change the user's result or exception.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, overload

logger = logging.getLogger("reach_otel")

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


@overload
def safe(fn: F) -> F: ...


@overload
def safe(fn: None = None, *, default: Any = None) -> Callable[[F], F]: ...


def safe(fn: F | None = None, *, default: Any = None) -> Any:
    """Decorate an internal telemetry step: on any ``Exception`` log at DEBUG, return ``default``."""

    def decorate(inner: F) -> F:
        @functools.wraps(inner)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return inner(*args, **kwargs)
            except Exception:  # telemetry must never raise into user code
                logger.debug("reach_otel: %s failed", inner.__qualname__, exc_info=True)
                return default

        return wrapper  # type: ignore[return-value]

    return decorate(fn) if fn is not None else decorate


@contextmanager
def guarded(step: str) -> Iterator[None]:
    """Run a block of telemetry code; any ``Exception`` in it is logged at DEBUG and swallowed."""
    try:
        yield
    except Exception:  # telemetry must never raise into user code
        logger.debug("reach_otel: %s failed", step, exc_info=True)

"""Exceptions reach_otel raises on purpose — only when the application asked for it."""

from __future__ import annotations


class HopLimitExceeded(RuntimeError):
    """Raised at a handoff past ``max_hops`` when ``init(on_loop="raise")`` was asked for."""

    def __init__(self, hops: int, limit: int, path: list[str]) -> None:
        self.hops = hops
        self.limit = limit
        self.path = path
        super().__init__(f"handoff {hops} exceeds max_hops={limit} (path: {' -> '.join(path)})")


HopLimitExceeded.__module__ = "reach_otel"


def error_type(exc: BaseException) -> str:
    """``error.type`` for an exception: ``module.QualName``, builtins bare (``ValueError``)."""
    cls = type(exc)
    module = cls.__module__
    if module in ("builtins", "__builtin__", None):
        return cls.__qualname__
    return f"{module}.{cls.__qualname__}"

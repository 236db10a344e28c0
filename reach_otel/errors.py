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


# -- exceptions that mean "hand off to another agent" (declared by the application) --------------
_TARGET_ATTRS = ("target", "target_agent", "target_agent_name", "to")
_handoff_exceptions: dict[type[BaseException], str | None] = {}


def register_handoff_exception(cls: type[BaseException], attr: str | None = None) -> None:
    """Raising ``cls`` records a takeover handoff to the agent named by ``attr`` (or a usual name)."""
    _handoff_exceptions[cls] = attr


def unregister_handoff_exception(cls: type[BaseException]) -> None:
    _handoff_exceptions.pop(cls, None)


def _name_of(value: object) -> str | None:
    if isinstance(value, str) and value:
        return value
    name = getattr(value, "name", None)  # an agent object
    return name if isinstance(name, str) and name else None


def handoff_target(exc: BaseException) -> str | None:
    """The target agent when ``exc`` is a registered handoff signal, else ``None`` (cheap when none)."""
    if not _handoff_exceptions:
        return None
    for cls, attr in _handoff_exceptions.items():
        if isinstance(exc, cls):
            for name in (attr,) if attr else _TARGET_ATTRS:
                target = _name_of(getattr(exc, name, None))
                if target:
                    return target
            return "unknown"
    return None

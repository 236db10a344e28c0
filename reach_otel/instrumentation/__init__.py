"""Auto-instrumentation: one BaseInstrumentor per library, and ``instrument()`` to apply them all.

Each instrumentor is also registered under the ``opentelemetry_instrumentor`` entry-point group,
so ``opentelemetry-instrument`` picks them up; ``reach-otel run`` applies them with ``init()``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from typing import Any

from reach_otel._safety import logger

#: name → "module:Class"; the name is what OTEL_PYTHON_DISABLED_INSTRUMENTATIONS lists.
INSTRUMENTORS: dict[str, str] = {
    "openai": "reach_otel.instrumentation.openai:OpenAIInstrumentor",
    "anthropic": "reach_otel.instrumentation.anthropic:AnthropicInstrumentor",
    "httpx": "reach_otel.instrumentation.httpx:HTTPXInstrumentor",
    "requests": "reach_otel.instrumentation.requests:RequestsInstrumentor",
    "starlette": "reach_otel.instrumentation.starlette:StarletteInstrumentor",
    "threading": "reach_otel.instrumentation.threading:ThreadingInstrumentor",
    "openai_agents": "reach_otel.instrumentation.openai_agents:OpenAIAgentsInstrumentor",
    "declarative": "reach_otel.instrumentation.declarative:DeclarativeInstrumentor",
}
_LIBRARY = {
    "openai": "openai",
    "anthropic": "anthropic",
    "httpx": "httpx",
    "requests": "requests",
    "starlette": "starlette",
    "openai_agents": "agents",
}


def _disabled() -> set[str]:
    raw = os.environ.get("OTEL_PYTHON_DISABLED_INSTRUMENTATIONS", "")
    return {name.strip() for name in raw.split(",") if name.strip()}


def _load(name: str) -> Any:
    module_name, _, cls_name = INSTRUMENTORS[name].partition(":")
    return getattr(importlib.import_module(module_name), cls_name)()


def available() -> list[str]:
    """Instrumentors whose library is installed here."""
    return [
        n for n in INSTRUMENTORS if n not in _LIBRARY or importlib.util.find_spec(_LIBRARY[n]) is not None
    ]


def instrument(*names: str, tracer_provider: Any = None, **kwargs: Any) -> list[str]:
    """Apply the named instrumentors (default: every available one not disabled); returns those applied."""
    unknown = [n for n in names if n not in INSTRUMENTORS]
    if unknown:
        raise ValueError(f"unknown instrumentation {unknown}; choose from {sorted(INSTRUMENTORS)}")
    chosen = list(names) or [n for n in available() if n not in _disabled()]
    applied = []
    for name in chosen:
        try:
            instrumentor = _load(name)
            if not instrumentor.is_instrumented_by_opentelemetry:
                instrumentor.instrument(tracer_provider=tracer_provider, **kwargs)
            applied.append(name)
        except Exception:  # one library failing to patch must not stop the others, nor the app
            logger.warning("reach_otel: could not instrument %s", name, exc_info=True)
    return applied


def uninstrument(*names: str) -> list[str]:
    """Remove the named instrumentors (default: all that are applied)."""
    removed = []
    for name in names or tuple(INSTRUMENTORS):
        try:
            instrumentor = _load(name)
        except Exception:  # not importable here: nothing to remove
            continue
        if instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.uninstrument()
            removed.append(name)
    return removed


__all__ = ["INSTRUMENTORS", "available", "instrument", "uninstrument"]

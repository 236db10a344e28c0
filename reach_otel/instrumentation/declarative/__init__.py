"""Declarative wrapping of the application's own code, configured by variables or ``reach-otel.toml``.

``REACH_OTEL_WORKFLOWS``, ``REACH_OTEL_AGENTS`` (+ ``REACH_OTEL_AGENT_NAME_ATTR``), ``REACH_OTEL_TOOLS``,
``REACH_OTEL_HANDOFFS`` and ``REACH_OTEL_HANDOFF_EXCEPTIONS`` — see SPEC §2.2.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

from reach_otel.instrumentation.declarative.apply import Applier
from reach_otel.instrumentation.declarative.config import DeclarativeConfig, load_config
from reach_otel.instrumentation.declarative.package import _instruments


class DeclarativeInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """``instrument(config=DeclarativeConfig(...))`` or, by default, the variables and file."""

    _applier: Applier | None = None

    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        config = kwargs.get("config")
        if not isinstance(config, DeclarativeConfig):
            config = load_config()
        self._applier = Applier(config)
        self._applier.start()

    def _uninstrument(self, **kwargs: Any) -> None:
        if self._applier is not None:
            self._applier.undo()
            self._applier = None


__all__ = ["DeclarativeConfig", "DeclarativeInstrumentor", "load_config"]

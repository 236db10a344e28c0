"""Which GenAI span shape this process emits: v1.41.0 (the default) or the newest conventions.

``OTEL_SEMCONV_STABILITY_OPT_IN`` is a comma-separated list, as in OpenTelemetry contrib; the
value ``gen_ai_latest_experimental`` in it switches the library to the shape of the
``semantic-conventions-genai`` repository (``docs/gen-ai/gen-ai-agent-spans.md`` describes the
variable). The variable is read once, when the first handler is built (``init()``), and every
span start and LLM extractor asks :func:`latest` — this module is the one place that decides.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

from reach_otel import semconv as sc

OPT_IN_ENV: Final = "OTEL_SEMCONV_STABILITY_OPT_IN"
GEN_AI_LATEST_EXPERIMENTAL: Final = "gen_ai_latest_experimental"

_latest: bool | None = None


def opted_in(value: str | None) -> bool:
    """True when the comma-separated ``value`` lists ``gen_ai_latest_experimental`` (pure)."""
    if not value:
        return False
    return GEN_AI_LATEST_EXPERIMENTAL in (part.strip() for part in value.split(","))


def latest(environ: Mapping[str, str] | None = None) -> bool:
    """The process's shape: read from the environment on the first call, the same answer after."""
    global _latest
    if _latest is None:
        _latest = opted_in((os.environ if environ is None else environ).get(OPT_IN_ENV))
    return _latest


def set_latest(value: bool | None) -> bool | None:
    """Fix the shape (``None``: read the environment again on next use); returns the previous one.

    For tests, like :func:`reach_otel.handler.set_handler`; applications set the variable."""
    global _latest
    previous, _latest = _latest, value
    return previous


def cache_write_key() -> str:
    """The key of input tokens written to a provider's cache: ``cache_creation`` in v1.41.0,
    ``cache_write`` in the newest conventions (``semconv``); ``cache_read`` is the same in both."""
    if latest():
        return sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS
    return sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS

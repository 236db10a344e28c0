"""OpenAI instrumentation: ``chat.completions.create`` and ``responses.create``, sync and async, streamed.

Patched with wrapt (the SDK has no tracing hook of its own). Calls made through ``with_raw_response``
(as langchain-openai makes them) get the same span, with usage from the parsed response.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from reach_otel.config import env_bool
from reach_otel.instrumentation._base import handler_ref
from reach_otel.instrumentation._llm import LLMSpec, async_wrapper, sync_wrapper
from reach_otel.instrumentation.openai import extract
from reach_otel.instrumentation.openai.package import _instruments
from reach_otel.instrumentation.openai.raw import async_raw_aware, sync_raw_aware

_CHAT = "openai.resources.chat.completions.completions"
_RESPONSES = "openai.resources.responses.responses"
_active = False


def is_active() -> bool:
    """True while reach_otel's OpenAI instrumentation is applied (other integrations defer to it)."""
    return _active


def _specs(include_usage: bool) -> tuple[LLMSpec, LLMSpec]:
    """Chat completions and the responses API: the same extraction, their own request shapes."""
    chat = LLMSpec(
        provider="openai",
        request=extract.chat_request,
        response=extract.response_attributes,
        output_messages=extract.response_output,
        error_code=extract.error_code,
        accumulator=extract.ChatAccumulator,
        prepare=extract.with_usage_in_stream if include_usage else None,
    )
    return chat, replace(chat, request=extract.responses_request, prepare=None)


class OpenAIInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Patch the OpenAI client; ``include_usage=True`` (or ``REACH_OTEL_OPENAI_INCLUDE_USAGE``) asks
    streams for a final usage chunk when the caller did not set ``stream_options``."""

    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        global _active
        ref = handler_ref(kwargs.get("tracer_provider"))
        include_usage = bool(kwargs.get("include_usage")) or env_bool(
            "REACH_OTEL_OPENAI_INCLUDE_USAGE", False
        )
        chat, responses = _specs(include_usage)
        wrap_function_wrapper(_CHAT, "Completions.create", sync_raw_aware(sync_wrapper(chat, ref)))
        wrap_function_wrapper(_CHAT, "AsyncCompletions.create", async_raw_aware(async_wrapper(chat, ref)))
        wrap_function_wrapper(_RESPONSES, "Responses.create", sync_raw_aware(sync_wrapper(responses, ref)))
        wrap_function_wrapper(
            _RESPONSES, "AsyncResponses.create", async_raw_aware(async_wrapper(responses, ref))
        )
        _active = True

    def _uninstrument(self, **kwargs: Any) -> None:
        global _active
        import openai.resources.chat.completions.completions as chat
        import openai.resources.responses.responses as responses

        unwrap(chat.Completions, "create")
        unwrap(chat.AsyncCompletions, "create")
        unwrap(responses.Responses, "create")
        unwrap(responses.AsyncResponses, "create")
        _active = False


__all__ = ["OpenAIInstrumentor", "is_active"]

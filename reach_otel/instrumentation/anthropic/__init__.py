"""Anthropic instrumentation: ``messages.create``, sync and async, streamed or not."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from reach_otel.instrumentation._base import handler_ref
from reach_otel.instrumentation._llm import LLMSpec, async_wrapper, sync_wrapper
from reach_otel.instrumentation.anthropic import extract
from reach_otel.instrumentation.anthropic.package import _instruments

_MESSAGES = "anthropic.resources.messages.messages"

SPEC = LLMSpec(
    provider="anthropic",
    request=extract.messages_request,
    response=extract.response_attributes,
    output_messages=extract.output_messages,
    error_code=extract.error_code,
    accumulator=extract.MessageAccumulator,
)


class AnthropicInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        ref = handler_ref(kwargs.get("tracer_provider"))
        wrap_function_wrapper(_MESSAGES, "Messages.create", sync_wrapper(SPEC, ref))
        wrap_function_wrapper(_MESSAGES, "AsyncMessages.create", async_wrapper(SPEC, ref))

    def _uninstrument(self, **kwargs: Any) -> None:
        import anthropic.resources.messages.messages as messages

        unwrap(messages.Messages, "create")
        unwrap(messages.AsyncMessages, "create")


__all__ = ["AnthropicInstrumentor"]

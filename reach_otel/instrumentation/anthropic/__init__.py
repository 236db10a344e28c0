"""Anthropic instrumentation: ``messages.create``, sync and async, streamed or not.

Recent SDKs trace their own API calls when an OpenTelemetry provider is set (one more CLIENT span per
call, with the tokens counted a second time under the agent); while this instrumentation is on, the
SDK's tracer lookup answers None, so each call is our ``chat`` span alone. Clients resolve their
tracer on their first request: one that made a request before ``instrument()`` keeps the SDK's own.
"""

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
_BASE_CLIENT = "anthropic._base_client"


def _no_sdk_tracer(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> None:
    return None


def _sdk_traces() -> Any:
    """The SDK's base-client module when it has its own tracing, else None."""
    try:
        import anthropic._base_client as base_client
    except ImportError:
        return None
    return base_client if hasattr(base_client, "get_tracer") else None


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
        if _sdk_traces() is not None:
            wrap_function_wrapper(_BASE_CLIENT, "get_tracer", _no_sdk_tracer)

    def _uninstrument(self, **kwargs: Any) -> None:
        import anthropic.resources.messages.messages as messages

        unwrap(messages.Messages, "create")
        unwrap(messages.AsyncMessages, "create")
        base_client = _sdk_traces()
        if base_client is not None:
            unwrap(base_client, "get_tracer")


__all__ = ["AnthropicInstrumentor"]

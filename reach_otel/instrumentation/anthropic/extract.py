"""Pure extractors for the Anthropic SDK: request kwargs, messages and stream events."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from reach_otel import semconv as sc
from reach_otel.extract import llm_response_attributes, output_messages
from reach_otel.instrumentation._extract import field as _get
from reach_otel.instrumentation._llm import Request, StreamAccumulator


def messages_request(instance: Any, kwargs: dict[str, Any]) -> Request:
    return Request.read(instance, kwargs, system="system")


def requested_tools(result: Any) -> list[str]:
    return [
        _get(block, "name")
        for block in _get(result, "content") or ()
        if _get(block, "type") == "tool_use" and isinstance(_get(block, "name"), str)
    ]


def response_attributes(result: Any) -> Iterator[tuple[str, Any]]:
    yield from llm_response_attributes(result)
    tools = requested_tools(result)
    if tools:
        yield sc.REACH_LLM_TOOL_CALLS_REQUESTED, tools


def error_code(exc: BaseException) -> str | None:
    code = getattr(exc, "type", None)  # the body's error.type, e.g. rate_limit_error
    return code if isinstance(code, str) and code else None


class MessageAccumulator(StreamAccumulator):
    """Folds Anthropic stream events (message_start … message_stop)."""

    def add(self, event: Any) -> None:
        kind = _get(event, "type")
        if kind == "message_start":
            message = _get(event, "message")
            self.model = _get(message, "model")
            self.response_id = _get(message, "id")
            usage = _get(message, "usage")
            self.input_tokens = _get(usage, "input_tokens")
            self.output_tokens = _get(usage, "output_tokens")
        elif kind == "content_block_start":
            block = _get(event, "content_block")
            if _get(block, "type") == "tool_use":
                self.tools.append(_get(block, "name"))
        elif kind == "content_block_delta":
            text = _get(_get(event, "delta"), "text") if self.keep_text else None
            if isinstance(text, str):
                self.text.append(text)
        elif kind == "message_delta":
            reason = _get(_get(event, "delta"), "stop_reason")
            if isinstance(reason, str):
                self.reasons.append(reason)
            out = _get(_get(event, "usage"), "output_tokens")
            if isinstance(out, int):
                self.output_tokens = out


__all__ = ["MessageAccumulator", "error_code", "messages_request", "output_messages", "response_attributes"]

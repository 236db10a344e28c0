"""Pure extractors for the Anthropic SDK: request kwargs, messages and stream events.

Anthropic reports cached input apart from ``input_tokens``: ``cache_read_input_tokens`` becomes
``gen_ai.usage.cache_read.input_tokens`` and ``cache_creation_input_tokens`` the cache-write key of
the shape (``_shape.cache_write_key``), and ``gen_ai.usage.input_tokens`` is the sum of the three,
as the ``anthropic.inference.client`` refinement has it (open-telemetry/semantic-conventions
``docs/gen-ai/anthropic.md``; semantic-conventions-genai ``model/gen-ai/spans.yaml``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from reach_otel import _shape
from reach_otel import semconv as sc
from reach_otel.extractors import llm_response_attributes, output_messages
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


def _count(usage: Any, name: str) -> int | None:
    value = _get(usage, name)
    return value if value.__class__ is int else None


def usage_attributes(usage: Any) -> dict[str, int]:
    """Input (cached included), cache-read and cache-write tokens of an Anthropic ``usage``."""
    attrs: dict[str, int] = {}
    base = _count(usage, "input_tokens")
    read = _count(usage, "cache_read_input_tokens")
    write = _count(usage, "cache_creation_input_tokens")
    if base is not None:
        attrs[sc.GEN_AI_USAGE_INPUT_TOKENS] = base + (read or 0) + (write or 0)
    if read:
        attrs[sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = read
    if write:
        attrs[_shape.cache_write_key()] = write
    return attrs


def response_attributes(result: Any) -> Iterator[tuple[str, Any]]:
    yield from llm_response_attributes(result)
    yield from usage_attributes(_get(result, "usage")).items()  # after: its input tokens win
    tools = requested_tools(result)
    if tools:
        yield sc.REACH_LLM_TOOL_CALLS_REQUESTED, tools


def error_code(exc: BaseException) -> str | None:
    code = getattr(exc, "type", None)  # the body's error.type, e.g. rate_limit_error
    return code if isinstance(code, str) and code else None


class MessageAccumulator(StreamAccumulator):
    """Folds Anthropic stream events (message_start … message_stop)."""

    # The usage so far; message_delta's counts are cumulative, and replace those it carries.
    base: int | None = None  # input_tokens, cached tokens excluded
    read: int | None = None  # cache_read_input_tokens
    write: int | None = None  # cache_creation_input_tokens

    def attributes(self) -> dict[str, Any]:
        attrs = super().attributes()
        cache = {"cache_read_input_tokens": self.read, "cache_creation_input_tokens": self.write}
        attrs.update(usage_attributes(cache))
        return attrs

    def _usage(self, usage: Any) -> None:
        """A usage in the stream (message_start's, or message_delta's)."""
        base = _count(usage, "input_tokens")
        read = _count(usage, "cache_read_input_tokens")
        write = _count(usage, "cache_creation_input_tokens")
        self.base = base if base is not None else self.base
        self.read = read if read is not None else self.read
        self.write = write if write is not None else self.write
        if self.base is not None:
            self.input_tokens = self.base + (self.read or 0) + (self.write or 0)

    def add(self, event: Any) -> None:
        kind = _get(event, "type")
        if kind == "message_start":
            message = _get(event, "message")
            self.model = _get(message, "model")
            self.response_id = _get(message, "id")
            usage = _get(message, "usage")
            self.input_tokens = _get(usage, "input_tokens")
            self.output_tokens = _get(usage, "output_tokens")
            self._usage(usage)
        elif kind == "content_block_start":
            block = _get(event, "content_block")
            if _get(block, "type") == "tool_use":
                self.tools.append(_get(block, "name"))
                self.call_piece(_get(event, "index"), _get(block, "id"), _get(block, "name"))
        elif kind == "content_block_delta":
            delta = _get(event, "delta")
            text = _get(delta, "text") if self.keep_text else None
            if isinstance(text, str):
                self.text.append(text)
            elif _get(delta, "type") == "input_json_delta":
                self.call_piece(_get(event, "index"), arguments=_get(delta, "partial_json"))
        elif kind == "message_delta":
            reason = _get(_get(event, "delta"), "stop_reason")
            if isinstance(reason, str):
                self.reasons.append(reason)
            usage = _get(event, "usage")
            out = _get(usage, "output_tokens")
            if isinstance(out, int):
                self.output_tokens = out
            self._usage(usage)


__all__ = ["MessageAccumulator", "error_code", "messages_request", "output_messages", "response_attributes"]

"""Pure extractors for the OpenAI SDK: request kwargs, whole responses and stream chunks.

Cached input tokens (``usage.prompt_tokens_details.cached_tokens``, or the responses API's
``usage.input_tokens_details.cached_tokens``) become ``gen_ai.usage.cache_read.input_tokens``, the
same key in both shapes (semantic-conventions-genai ``model/gen-ai/spans.yaml``, the
``openai.inference.client`` refinement); OpenAI's input tokens already include them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from reach_otel import semconv as sc
from reach_otel.extractors import finish_reasons, llm_response_attributes, output_messages, usage_tokens
from reach_otel.instrumentation._extract import field as _get
from reach_otel.instrumentation._llm import Request, StreamAccumulator


def chat_request(instance: Any, kwargs: dict[str, Any]) -> Request:
    return Request.read(instance, kwargs)


def responses_request(instance: Any, kwargs: dict[str, Any]) -> Request:
    return Request.read(instance, kwargs, messages="input", system="instructions")


def with_usage_in_stream(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Ask for usage in the final stream chunk, unless the caller chose stream options already."""
    if kwargs.get("stream") and "stream_options" not in kwargs:
        return {**kwargs, "stream_options": {"include_usage": True}}
    return kwargs


def requested_tools(result: Any) -> list[str]:
    """Names of the tools the model asked to call (chat tool_calls or responses function_call items)."""
    names: list[str] = []
    for choice in _get(result, "choices") or ():
        for call in _get(_get(choice, "message"), "tool_calls") or ():
            name = _get(_get(call, "function"), "name")
            if isinstance(name, str):
                names.append(name)
    for item in _get(result, "output") or ():
        if _get(item, "type") == "function_call" and isinstance(_get(item, "name"), str):
            names.append(_get(item, "name"))
    return names


def cache_read(usage: Any) -> int | None:
    """Input tokens served from OpenAI's prompt cache, when the usage reports some."""
    details = _get(usage, "prompt_tokens_details")
    if details is None:
        details = _get(usage, "input_tokens_details")
    cached = _get(details, "cached_tokens")
    return cached if cached.__class__ is int and cached > 0 else None


def _chat_completion(result: Any) -> dict[str, Any]:
    """The attributes of an SDK ``ChatCompletion``, read field by field (the common, hot case)."""
    attrs: dict[str, Any] = {sc.GEN_AI_RESPONSE_MODEL: result.model, sc.GEN_AI_RESPONSE_ID: result.id}
    reasons: list[str] = []
    tools: list[str] = []
    for choice in result.choices:
        if choice.finish_reason:
            reasons.append(choice.finish_reason)
        calls = choice.message.tool_calls if choice.message is not None else None
        if calls:
            tools.extend(
                name for call in calls if isinstance(name := _get(_get(call, "function"), "name"), str)
            )
    if reasons:
        attrs[sc.GEN_AI_RESPONSE_FINISH_REASONS] = reasons
    if tools:
        attrs[sc.REACH_LLM_TOOL_CALLS_REQUESTED] = tools
    usage = result.usage
    if usage is not None:
        attrs[sc.GEN_AI_USAGE_INPUT_TOKENS] = usage.prompt_tokens
        attrs[sc.GEN_AI_USAGE_OUTPUT_TOKENS] = usage.completion_tokens
        cached = cache_read(usage)
        if cached is not None:
            attrs[sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = cached
    return attrs


def response_attributes(result: Any) -> Iterator[tuple[str, Any]]:
    if type(result).__name__ == "ChatCompletion":
        try:
            yield from _chat_completion(result).items()
            return
        except AttributeError:  # an unexpected shape: the general path below reads anything
            pass
    yield from llm_response_attributes(result)
    cached = cache_read(_get(result, "usage"))
    if cached is not None:
        yield sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, cached
    tools = requested_tools(result)
    if tools:
        yield sc.REACH_LLM_TOOL_CALLS_REQUESTED, tools


def response_output(result: Any) -> Any:
    text = _get(result, "output_text")
    return output_messages(text) if isinstance(text, str) else output_messages(result)


def error_code(exc: BaseException) -> str | None:
    code = getattr(exc, "code", None)
    return code if isinstance(code, str) and code else None


class ChatAccumulator(StreamAccumulator):
    """Folds ``chat.completion.chunk`` objects (and responses API stream events).

    ``add`` runs once per chunk on the application's thread, so the common case — an SDK chunk
    object — reads its fields directly; dicts and responses API events take the general path.
    """

    cache_read: int | None = None

    def attributes(self) -> dict[str, Any]:
        attrs = super().attributes()
        if self.cache_read is not None:
            attrs[sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = self.cache_read
        return attrs

    def add(self, chunk: Any) -> None:
        choices = getattr(chunk, "choices", None)
        if choices is None or isinstance(chunk, dict):
            self._add_general(chunk)
            return
        if self.model is None:
            self.model = chunk.model
            self.response_id = chunk.id
        for choice in choices:
            reason = choice.finish_reason
            if reason:
                self.reasons.append(reason)
            delta = choice.delta
            if delta is None:
                continue
            if delta.tool_calls:
                self._tool_deltas(delta.tool_calls)
            if self.keep_text and delta.content:
                self.text.append(delta.content)
        usage = chunk.usage
        if usage is not None:
            self.input_tokens, self.output_tokens = usage.prompt_tokens, usage.completion_tokens
            self.cache_read = cache_read(usage)

    def _tool_deltas(self, calls: Any) -> None:
        for call in calls:
            function = _get(call, "function")
            name = _get(function, "name")
            if isinstance(name, str) and name:
                self.tools.append(name)
            index, call_id = _get(call, "index"), _get(call, "id")
            self.call_piece(call_id if index is None else index, call_id, name, _get(function, "arguments"))

    def _add_general(self, chunk: Any) -> None:
        kind = _get(chunk, "type")
        final = _get(chunk, "response")  # responses API: response.completed / response.incomplete
        if final is not None and kind in ("response.completed", "response.incomplete"):
            self._whole(final)
            return
        if self.model is None:
            self.model = _get(chunk, "model")
            self.response_id = _get(chunk, "id")
        item = _get(chunk, "item")
        if item is not None and _get(item, "type") == "function_call":
            self.tools.append(_get(item, "name"))
            self.call_piece(_get(item, "id"), _get(item, "call_id"), _get(item, "name"))
        if kind == "response.function_call_arguments.delta":
            self.call_piece(_get(chunk, "item_id"), arguments=_get(chunk, "delta"))
        if self.keep_text and kind == "response.output_text.delta" and isinstance(_get(chunk, "delta"), str):
            self.text.append(_get(chunk, "delta"))
        for choice in _get(chunk, "choices") or ():
            delta = _get(choice, "delta")
            content = _get(delta, "content")
            if self.keep_text and isinstance(content, str):
                self.text.append(content)
            self._tool_deltas(_get(delta, "tool_calls") or ())
        self.reasons.extend(finish_reasons(chunk))
        inp, out = usage_tokens(chunk)
        if inp is not None or out is not None:
            self.input_tokens, self.output_tokens = inp, out
            self.cache_read = cache_read(_get(chunk, "usage"))

    def _whole(self, response: Any) -> None:
        self.model = _get(response, "model") or self.model
        self.response_id = _get(response, "id") or self.response_id
        self.reasons.extend(finish_reasons(response))
        self.input_tokens, self.output_tokens = usage_tokens(response)
        self.cache_read = cache_read(_get(response, "usage"))
        for name in requested_tools(response):
            if name not in self.tools:
                self.tools.append(name)
        if self.keep_text and not self.text and isinstance(_get(response, "output_text"), str):
            self.text.append(_get(response, "output_text"))

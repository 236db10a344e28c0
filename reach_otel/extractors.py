"""Pure extractors: turn call arguments and results into ``(key, value)`` attribute pairs.

Nothing here touches a span, so each function is testable on plain data. They accept dicts and
SDK objects alike (OpenAI chat completions and responses, Anthropic messages, stream chunks).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from reach_otel import semconv as sc

_MESSAGE_ARG_NAMES = ("messages", "input", "query", "question", "prompt", "message", "request", "text")


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def usage_tokens(obj: Any) -> tuple[int | None, int | None]:
    """(input, output) tokens from a result or chunk carrying ``usage``, in any provider's naming."""
    usage = _get(obj, "usage")
    if usage is None:
        return None, None
    inp = _int(_get(usage, "input_tokens"))
    if inp is None:
        inp = _int(_get(usage, "prompt_tokens"))
    out = _int(_get(usage, "output_tokens"))
    if out is None:
        out = _int(_get(usage, "completion_tokens"))
    return inp, out


def finish_reasons(obj: Any) -> list[str]:
    reasons: list[str] = []
    choices = _get(obj, "choices")
    if isinstance(choices, (list, tuple)):
        for choice in choices:
            reason = _get(choice, "finish_reason")
            if isinstance(reason, str):
                reasons.append(reason)
    for key in ("stop_reason", "finish_reason"):  # anthropic / single-choice dicts
        reason = _get(obj, key)
        if isinstance(reason, str):
            reasons.append(reason)
    if not reasons and _get(obj, "object") == "response":  # openai responses API
        status = _get(obj, "status")
        if isinstance(status, str):
            reasons.append(status)
    return reasons


def llm_response_attributes(result: Any) -> Iterator[tuple[str, Any]]:
    """Response model, id, finish reasons and token usage, when the result carries them."""
    if result is None or isinstance(result, (str, bytes, int, float, bool)):
        return
    model = _get(result, "model")
    if isinstance(model, str) and model:
        yield sc.GEN_AI_RESPONSE_MODEL, model
    response_id = _get(result, "id")
    if isinstance(response_id, str) and response_id:
        yield sc.GEN_AI_RESPONSE_ID, response_id
    reasons = finish_reasons(result)
    if reasons:
        yield sc.GEN_AI_RESPONSE_FINISH_REASONS, reasons
    inp, out = usage_tokens(result)
    if inp is not None:
        yield sc.GEN_AI_USAGE_INPUT_TOKENS, inp
    if out is not None:
        yield sc.GEN_AI_USAGE_OUTPUT_TOKENS, out


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "content": text}


def to_messages(value: Any, default_role: str) -> list[dict[str, Any]] | None:
    """GenAI message-list form of ``value`` when it is a message (or messages), else ``None``."""
    if isinstance(value, str):
        return [{"role": default_role, "parts": [_text_part(value)]}]
    if isinstance(value, Mapping) and isinstance(value.get("role"), str):
        value = [value]
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(m, Mapping) and isinstance(m.get("role"), str) for m in value)
    ):
        out = []
        for m in value:
            content = m.get("content", m.get("parts"))
            parts = [_text_part(content)] if isinstance(content, str) else content
            out.append({"role": m["role"], "parts": parts if parts is not None else []})
        return out
    return None


def message_argument(bound: Mapping[str, Any]) -> Any:
    """The argument of a call that carries its input messages: a well-known name, else the first."""
    for name in _MESSAGE_ARG_NAMES:
        if name in bound:
            return bound[name]
    for value in bound.values():
        return value
    return None


def output_messages(result: Any) -> list[dict[str, Any]] | None:
    """Assistant output messages from an LLM result (chat choices, anthropic content) or plain text."""
    if isinstance(result, str):
        return to_messages(result, "assistant")
    choices = _get(result, "choices")
    if isinstance(choices, (list, tuple)):
        msgs = []
        for choice in choices:
            message = _get(choice, "message")
            content = _get(message, "content") if message is not None else None
            if isinstance(content, str):
                msg: dict[str, Any] = {"role": "assistant", "parts": [_text_part(content)]}
                reason = _get(choice, "finish_reason")
                if isinstance(reason, str):
                    msg["finish_reason"] = reason
                msgs.append(msg)
        return msgs or None
    blocks = _get(result, "content")
    if isinstance(blocks, (list, tuple)):  # anthropic message content blocks
        texts = [_get(b, "text") for b in blocks]
        parts = [_text_part(t) for t in texts if isinstance(t, str)]
        if parts:
            return [{"role": "assistant", "parts": parts}]
    return to_messages(result, "assistant")

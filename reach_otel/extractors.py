"""Pure extractors: turn call arguments and results into ``(key, value)`` attribute pairs.

Nothing here touches a span, so each function is testable on plain data. They accept dicts and
SDK objects alike (OpenAI chat completions and responses, Anthropic messages, stream chunks).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
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


def _arguments(raw: Any) -> Any:
    """A tool call's arguments as the model wrote them: JSON text read as JSON, else as given."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def tool_call_part(call_id: Any, name: str, arguments: Any) -> dict[str, Any]:
    """A GenAI ``tool_call`` part; ``arguments`` as the model wrote them (JSON text read as JSON)."""
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": _arguments(arguments)}


def assistant_message(text: str, calls: Sequence[dict[str, Any]] = ()) -> list[dict[str, Any]] | None:
    """The output messages of an answer given as text and tool-call parts (a stream's, folded)."""
    parts = [_text_part(text)] if text else []
    parts += calls
    return [{"role": "assistant", "parts": parts}] if parts else None


def _tool_call_parts(calls: Any) -> list[dict[str, Any]]:
    """OpenAI ``tool_calls`` (dicts or SDK objects) as GenAI ``tool_call`` parts."""
    if not isinstance(calls, (list, tuple)):
        return []
    parts = []
    for call in calls:
        function = _get(call, "function")
        name = _get(function, "name")
        if isinstance(name, str):
            parts.append(tool_call_part(_get(call, "id"), name, _get(function, "arguments")))
    return parts


def _block_part(block: Any) -> Any:
    """One content block as a GenAI part: text, an Anthropic ``tool_use`` (a tool call) or
    ``tool_result`` (its response); a part already in that form, or another kind, as it is."""
    if isinstance(block, str):
        return _text_part(block)
    kind = _get(block, "type")
    if kind == "text" and isinstance(_get(block, "text"), str):
        return _text_part(_get(block, "text"))
    if kind == "tool_use":
        return tool_call_part(_get(block, "id"), _get(block, "name"), _get(block, "input"))
    if kind == "tool_result":
        return {
            "type": "tool_call_response",
            "id": _get(block, "tool_use_id"),
            "response": _get(block, "content"),
        }
    if hasattr(block, "model_dump"):
        return block.model_dump(mode="json", exclude_none=True)
    return block


def _parts(content: Any) -> list[Any]:
    if content is None:
        return []
    if isinstance(content, (list, tuple)):
        return [_block_part(b) for b in content]
    return [_block_part(content)]


def _message(m: Mapping[str, Any]) -> dict[str, Any]:
    """One chat message (OpenAI's or Anthropic's request shape, or already GenAI's) in GenAI form:
    its text and blocks as parts, the assistant's tool calls as ``tool_call`` parts, and a ``tool``
    message as the ``tool_call_response`` to the call it answers."""
    content = m.get("content", m.get("parts"))
    if m["role"] == "tool" and m.get("tool_call_id") is not None:
        return {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": m["tool_call_id"], "response": content}],
        }
    return {"role": m["role"], "parts": _parts(content) + _tool_call_parts(m.get("tool_calls"))}


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
        return [_message(m) for m in value]
    return None


def system_instructions(system: Any) -> list[Any] | None:
    """A request's separate system prompt (Anthropic's ``system``, the Responses API's
    ``instructions``) as GenAI parts; None when there is none. (A chat API's system message is part
    of its chat history, and stays in the input messages, as the conventions say.)"""
    parts = _parts(system)
    return parts or None


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
            parts = [_text_part(content)] if isinstance(content, str) else []
            parts += _tool_call_parts(_get(message, "tool_calls"))  # an answer that is a tool call
            if parts:
                msg: dict[str, Any] = {"role": "assistant", "parts": parts}
                reason = _get(choice, "finish_reason")
                if isinstance(reason, str):
                    msg["finish_reason"] = reason
                msgs.append(msg)
        return msgs or None
    blocks = _get(result, "content")
    if isinstance(blocks, (list, tuple)):  # anthropic message content blocks: text and tool_use
        parts = [
            _block_part(b) for b in blocks if _get(b, "type") in ("text", "tool_use") or isinstance(b, str)
        ]
        if parts:
            msg = {"role": "assistant", "parts": parts}
            reason = _get(result, "stop_reason")
            if isinstance(reason, str):
                msg["finish_reason"] = reason
            return [msg]
    return to_messages(result, "assistant")

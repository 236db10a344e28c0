"""OpenAI wire formats for the fake LLM: chat completions, responses, errors, models.

Pure builders from a :class:`~reach_otel.testing._fake_script.Reply` to JSON bodies and
server-sent-event lists ``[(event_name | None, payload)]``, shaped like the real API's.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from reach_otel.testing._fake_script import Reply

SSE = list[tuple[str | None, Any]]

_ERRORS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Request not allowed."),
    404: ("invalid_request_error", "model_not_found", "The model does not exist."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests."),
    500: ("server_error", None, "The server had an error while processing your request."),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
}


def error_body(status: int) -> dict[str, Any]:
    kind, code, message = _ERRORS.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", None, "Error.")
    )
    return {"error": {"message": f"{message} (fake LLM)", "type": kind, "param": None, "code": code}}


def models_body(models: list[str]) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [{"id": m, "object": "model", "created": 0, "owned_by": "reach-otel"} for m in models],
    }


# -- chat completions ----------------------------------------------------------------------------
def _chat_usage(reply: Reply) -> dict[str, Any]:
    return {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }


def _tool_call(reply: Reply, call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": reply.tool_name, "arguments": reply.tool_arguments},
    }


def chat_completion(reply: Reply, model: str, n: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None, "annotations": []}
    if reply.is_tool_call:
        message["tool_calls"] = [_tool_call(reply, f"call_fake_{n}")]
    else:
        message["content"] = reply.text
    return {
        "id": f"chatcmpl-fake-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if reply.is_tool_call else "stop",
            }
        ],
        "usage": _chat_usage(reply),
        "service_tier": "default",
        "system_fingerprint": None,
    }


def chat_chunks(reply: Reply, model: str, n: int, include_usage: bool) -> SSE:
    """chat.completion.chunk events, an optional usage-only chunk, then ``[DONE]``."""
    created = int(time.time())
    extra = {"usage": None} if include_usage else {}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, dict[str, Any]]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        body = {
            "id": f"chatcmpl-fake-{n}",
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "service_tier": "default",
            "system_fingerprint": None,
            "choices": [choice],
            **extra,
        }
        return None, body

    events: SSE = []
    if reply.is_tool_call:
        head = {"index": 0, "id": f"call_fake_{n}", "type": "function"}
        head["function"] = {"name": reply.tool_name, "arguments": ""}
        events.append(chunk({"role": "assistant", "content": None, "tool_calls": [head], "refusal": None}))
        for part in reply.argument_chunks():
            events.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}))
        events.append(chunk({}, "tool_calls"))
    else:
        events.append(chunk({"role": "assistant", "content": "", "refusal": None}))
        events.extend(chunk({"content": part}) for part in reply.text_chunks())
        events.append(chunk({}, "stop"))
    if include_usage:
        _, last = chunk({})
        last["choices"] = []
        last["usage"] = _chat_usage(reply)
        events.append((None, last))
    events.append((None, "[DONE]"))
    return events


# -- responses -----------------------------------------------------------------------------------
def _response_usage(reply: Reply) -> dict[str, Any]:
    return {
        "input_tokens": reply.input_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": reply.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": reply.input_tokens + reply.output_tokens,
    }


def _output_item(reply: Reply, n: int, done: bool) -> dict[str, Any]:
    status = "completed" if done else "in_progress"
    if reply.is_tool_call:
        return {
            "id": f"fc_fake_{n}",
            "type": "function_call",
            "status": status,
            "call_id": f"call_fake_{n}",
            "name": reply.tool_name,
            "arguments": reply.tool_arguments if done else "",
        }
    content = [_text_part(reply.text)] if done else []
    return {
        "id": f"msg_fake_{n}",
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": content,
    }


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def response_object(
    reply: Reply, request: Mapping[str, Any], model: str, n: int, done: bool = True
) -> dict[str, Any]:
    return {
        "id": f"resp_fake_{n}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed" if done else "in_progress",
        "completed_at": int(time.time()) if done else None,
        "error": None,
        "incomplete_details": None,
        "instructions": request.get("instructions"),
        "max_output_tokens": request.get("max_output_tokens"),
        "model": model,
        "output": [_output_item(reply, n, True)] if done else [],
        "parallel_tool_calls": bool(request.get("parallel_tool_calls", True)),
        "previous_response_id": request.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "store": bool(request.get("store", True)),
        "temperature": request.get("temperature", 1.0),
        "text": {"format": {"type": "text"}},
        "tool_choice": request.get("tool_choice", "auto"),
        "tools": list(request.get("tools") or []),
        "top_p": request.get("top_p", 1.0),
        "truncation": "disabled",
        "usage": _response_usage(reply) if done else None,
        "user": None,
        "metadata": request.get("metadata") or {},
    }


def response_events(reply: Reply, request: Mapping[str, Any], model: str, n: int) -> SSE:
    """The responses API event sequence, from ``response.created`` to ``response.completed``."""
    events: SSE = []

    def emit(kind: str, **fields: Any) -> None:
        events.append((kind, {"type": kind, "sequence_number": len(events), **fields}))

    pending = response_object(reply, request, model, n, done=False)
    emit("response.created", response=pending)
    emit("response.in_progress", response=pending)
    item = _output_item(reply, n, done=False)
    where = {"item_id": item["id"], "output_index": 0}
    emit("response.output_item.added", output_index=0, item=item)
    if reply.is_tool_call:
        for part in reply.argument_chunks():
            emit("response.function_call_arguments.delta", **where, delta=part)
        emit(
            "response.function_call_arguments.done",
            **where,
            arguments=reply.tool_arguments,
            name=reply.tool_name,
        )
    else:
        emit("response.content_part.added", **where, content_index=0, part=_text_part(""))
        for part in reply.text_chunks():
            emit("response.output_text.delta", **where, content_index=0, delta=part, logprobs=[])
        emit("response.output_text.done", **where, content_index=0, text=reply.text, logprobs=[])
        emit("response.content_part.done", **where, content_index=0, part=_text_part(reply.text))
    emit("response.output_item.done", output_index=0, item=_output_item(reply, n, done=True))
    emit("response.completed", response=response_object(reply, request, model, n))
    return events

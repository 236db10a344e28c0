"""Anthropic wire formats for the fake LLM: messages (JSON and SSE), errors, models.

Pure builders from a :class:`~reach_otel.testing._fake_script.Reply`, shaped like the real API's:
``message_start`` carries ``usage.input_tokens``, ``message_delta`` the final ``output_tokens``.
"""

from __future__ import annotations

import json
from typing import Any

from reach_otel.testing._fake_openai import SSE
from reach_otel.testing._fake_script import Reply

_ERRORS: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def error_body(status: int) -> dict[str, Any]:
    kind = _ERRORS.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": f"{kind} (fake LLM)"}}


def models_body(models: list[str]) -> dict[str, Any]:
    data = [
        {"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"} for m in models
    ]
    return {
        "data": data,
        "has_more": False,
        "first_id": models[0] if models else None,
        "last_id": models[-1] if models else None,
    }


def _usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _block(reply: Reply, n: int) -> dict[str, Any]:
    if reply.is_tool_call:
        return {
            "type": "tool_use",
            "id": f"toolu_fake_{n}",
            "name": reply.tool_name,
            "input": json.loads(reply.tool_arguments),
        }
    return {"type": "text", "text": reply.text}


def _stop_reason(reply: Reply) -> str:
    return "tool_use" if reply.is_tool_call else "end_turn"


def message(reply: Reply, model: str, n: int) -> dict[str, Any]:
    return {
        "id": f"msg_fake_{n}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [_block(reply, n)],
        "stop_reason": _stop_reason(reply),
        "stop_sequence": None,
        "usage": _usage(reply.input_tokens, reply.output_tokens),
    }


def message_events(reply: Reply, model: str, n: int) -> SSE:
    start = message(reply, model, n)
    start.update(content=[], stop_reason=None, usage=_usage(reply.input_tokens, 0))
    events: SSE = [("message_start", {"type": "message_start", "message": start})]
    if reply.is_tool_call:
        head = {**_block(reply, n), "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in reply.argument_chunks()]
    else:
        head = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in reply.text_chunks()]
    events.append(("content_block_start", {"type": "content_block_start", "index": 0, "content_block": head}))
    events.append(("ping", {"type": "ping"}))
    events.extend(
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": d}) for d in deltas
    )
    events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
    delta = {"stop_reason": _stop_reason(reply), "stop_sequence": None}
    usage = {"output_tokens": reply.output_tokens}
    events.append(("message_delta", {"type": "message_delta", "delta": delta, "usage": usage}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events

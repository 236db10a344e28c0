"""Pure extractors for Agents SDK span data: model output → GenAI messages and requested tools.

The SDK records a generation's output as chat-completions message dicts and a response span's as
Responses API output items (objects or dicts); both become GenAI ``{"role", "parts"}`` messages.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit


def _as_dict(item: Any) -> Mapping[str, Any] | None:
    if isinstance(item, Mapping):
        return item
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        try:
            value = dump()
        except Exception:  # a half-built SDK object: nothing to extract
            return None
        return value if isinstance(value, Mapping) else None
    return None


def _text_parts(content: Any) -> Iterator[dict[str, Any]]:
    if isinstance(content, str):
        yield {"type": "text", "content": content}
    elif isinstance(content, list):
        for part in content:
            text = part.get("text") if isinstance(part, Mapping) else None
            if isinstance(text, str):
                yield {"type": "text", "content": text}


def _tool_part(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments)
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}


def output_parts(output: Iterable[Any] | None) -> list[dict[str, Any]]:
    """Message parts (text and tool calls) of a generation's or a response's output."""
    parts: list[dict[str, Any]] = []
    for raw in output or ():
        item = _as_dict(raw)
        if item is None:
            continue
        kind = item.get("type")
        if kind == "function_call":  # a Responses API output item
            parts.append(_tool_part(item.get("call_id"), item.get("name"), item.get("arguments")))
            continue
        parts.extend(_text_parts(item.get("content")))
        for call in item.get("tool_calls") or ():  # a chat-completions assistant message
            if isinstance(call, Mapping):
                function = call.get("function") or {}
                parts.append(_tool_part(call.get("id"), function.get("name"), function.get("arguments")))
    return parts


def output_messages(output: Iterable[Any] | None) -> list[dict[str, Any]] | None:
    parts = output_parts(output)
    return [{"role": "assistant", "parts": parts}] if parts else None


def requested_tools(output: Iterable[Any] | None) -> list[str]:
    """Names of the tools the model asked to call, in order."""
    return [
        p["name"] for p in output_parts(output) if p["type"] == "tool_call" and isinstance(p["name"], str)
    ]


def server_of(model_config: Any) -> tuple[str | None, int | None]:
    """``server.address`` and ``server.port`` from the ``base_url`` the SDK puts in model_config."""
    base_url = model_config.get("base_url") if isinstance(model_config, Mapping) else None
    if not isinstance(base_url, str):
        return None, None
    parts = urlsplit(base_url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        port = None
    return parts.hostname, port


def json_or_text(value: Any) -> Any:
    """A tool's JSON arguments as data (so they are not encoded twice), other values unchanged."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value

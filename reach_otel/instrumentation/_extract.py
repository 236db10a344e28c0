"""Pure helpers shared by the provider extractors: field access, request parameters, server."""

from __future__ import annotations

import contextlib
import weakref
from typing import Any

from reach_otel import semconv as sc

_REQUEST_PARAMS = (
    ("max_tokens", sc.GEN_AI_REQUEST_MAX_TOKENS),
    ("max_completion_tokens", sc.GEN_AI_REQUEST_MAX_TOKENS),
    ("max_output_tokens", sc.GEN_AI_REQUEST_MAX_TOKENS),
    ("temperature", sc.GEN_AI_REQUEST_TEMPERATURE),
    ("top_p", sc.GEN_AI_REQUEST_TOP_P),
)


def field(obj: Any, name: str) -> Any:
    """``obj[name]`` for dicts, ``obj.name`` for SDK objects, ``None`` when absent."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


_servers: weakref.WeakKeyDictionary[Any, tuple[Any, tuple[str | None, int | None]]] = (
    weakref.WeakKeyDictionary()
)


def server_of(instance: Any) -> tuple[str | None, int | None]:
    """Host and port of the SDK client behind a resource object (``resource._client.base_url``)."""
    client = getattr(instance, "_client", None)
    url = getattr(client, "base_url", None)
    try:
        cached = _servers.get(client)
    except TypeError:  # a client that takes no weak references
        cached = None
    if cached is not None and cached[0] is url:
        return cached[1]
    host = getattr(url, "host", None)
    found: tuple[str | None, int | None] = (None, None)
    if host:
        found = (host, getattr(url, "port", None) or (443 if getattr(url, "scheme", "") == "https" else 80))
    with contextlib.suppress(TypeError):  # a client that takes no weak references is not cached
        _servers[client] = (url, found)
    return found


def request_params(kwargs: dict[str, Any]) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    for name, key in _REQUEST_PARAMS:
        value = kwargs.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            attrs[key] = value
    return attrs

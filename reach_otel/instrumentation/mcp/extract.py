"""Pure extraction for MCP spans: a request's attributes, its result's outcome, an error's code.

No spans here, and nothing that raises on odd input: params and results arrive as the wire's
dicts (camelCase) or as the SDK's pydantic models.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from reach_otel import semconv as sc

#: JSON-RPC's "invalid params": what the SDK answers for params that fail validation.
INVALID_PARAMS = -32602
#: The SDK's ``_meta`` key (and HTTP header) of the protocol version a request speaks.
PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"
PROTOCOL_VERSION_HEADER = "mcp-protocol-version"
SESSION_ID_HEADER = "mcp-session-id"
_RESOURCE_METHODS = ("resources/read", "resources/subscribe", "resources/unsubscribe")
#: The ``_meta`` keys of W3C trace context and baggage (SEP-414, the MCP semantic conventions).
TRACE_KEYS = ("traceparent", "tracestate", "baggage")


def _get(obj: Any, key: str, attr: str | None = None) -> Any:
    """``obj[key]`` for a mapping, ``obj.<attr or key>`` for a model; None when absent."""
    if type(obj) is dict:  # the wire's params: skip the (slower) Mapping ABC check
        return obj.get(key)
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, attr or key, None)


def target(method: str, params: Any) -> str | None:
    """The low-cardinality part of the span name: the tool's or the prompt's name."""
    if method in (sc.MCP_TOOLS_CALL, sc.MCP_PROMPTS_GET):
        name = _get(params, "name")
        return name if isinstance(name, str) and name else None
    return None


def request_attributes(method: str, params: Any, request_id: Any = None) -> Iterator[tuple[str, Any]]:
    """``mcp.method.name`` first, then what the method's params name (tool, prompt, resource)."""
    yield sc.MCP_METHOD_NAME, method
    if request_id is not None:
        yield sc.JSONRPC_REQUEST_ID, str(request_id)
    name = target(method, params)
    if method == sc.MCP_TOOLS_CALL:
        yield sc.GEN_AI_OPERATION_NAME, sc.OP_TOOL
        if name:
            yield sc.GEN_AI_TOOL_NAME, name
    elif method == sc.MCP_PROMPTS_GET and name:
        yield sc.GEN_AI_PROMPT_NAME, name
    elif method in _RESOURCE_METHODS:
        uri = _get(params, "uri")
        if uri is not None:
            yield sc.MCP_RESOURCE_URI, str(uri)


def tool_arguments(params: Any) -> Any:
    return _get(params, "arguments")


def requested_protocol_version(method: str, params: Any, opts: Any) -> str | None:
    """The version an outgoing request speaks: its header or ``_meta`` stamp, or what ``initialize`` asks."""
    headers = _get(opts, "headers")
    if isinstance(headers, Mapping):
        for key, value in headers.items():
            if isinstance(key, str) and key.lower() == PROTOCOL_VERSION_HEADER and isinstance(value, str):
                return value
    meta = _get(params, "_meta")
    if isinstance(meta, Mapping) and isinstance(meta.get(PROTOCOL_VERSION_META_KEY), str):
        return str(meta[PROTOCOL_VERSION_META_KEY])
    if method == "initialize":
        version = _get(params, "protocolVersion", "protocol_version")
        return version if isinstance(version, str) else None
    return None


def negotiated_protocol_version(method: str, result: Any) -> str | None:
    """The version an ``initialize`` result settles on (other results carry none)."""
    if method != "initialize":
        return None
    version = _get(result, "protocolVersion", "protocol_version")
    return version if isinstance(version, str) else None


def is_tool_error(method: str, result: Any) -> bool:
    """A ``tools/call`` whose result says ``isError``: the call answered, the tool failed."""
    if method != sc.MCP_TOOLS_CALL:
        return False
    return _get(result, "isError", "is_error") is True


_MAX_ERROR_CHARS = 1024  # as an exception's message in a span's status


def _plain(result: Any) -> Any:
    """A ``tools/call`` result as the wire has it (camelCase keys): the SDK's model dumped, a dict as is."""
    if hasattr(result, "model_dump"):
        return result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return result


def tool_error_message(result: Any) -> str:
    """What a failed tool said: the text of its result's content blocks (an MCP server puts the
    exception's message there), joined and cut to 1024 characters; "" when it said nothing."""
    result = _plain(result)
    blocks = result.get("content") if isinstance(result, Mapping) else None
    if not isinstance(blocks, list):
        return ""
    texts = [b["text"] for b in blocks if isinstance(b, Mapping) and isinstance(b.get("text"), str)]
    return "\n".join(texts)[:_MAX_ERROR_CHARS]


def tool_result(result: Any) -> Any:
    """What a tool returned, for content capture: its structured content, else its content blocks."""
    result = _plain(result)
    if not isinstance(result, Mapping):
        return None
    structured = result.get("structuredContent")
    return structured if structured is not None else result.get("content")


def error_code(exc: BaseException) -> tuple[str, str] | None:
    """``(code, message)`` of a JSON-RPC error (an ``MCPError``, or params that failed validation)."""
    error = getattr(exc, "error", None)
    code = getattr(error, "code", None)
    if isinstance(code, int) and not isinstance(code, bool):
        message = getattr(error, "message", None)
        return str(code), message if isinstance(message, str) else ""
    if type(exc).__name__ == "ValidationError" and type(exc).__module__.startswith("pydantic"):
        # Pydantic's text quotes the client's input: like the SDK's wire answer, keep it out.
        return str(INVALID_PARAMS), "Invalid request parameters"
    return None


def trace_fields(meta: Any) -> dict[str, str]:
    """The W3C fields a request's ``_meta`` carries (nothing else of the app's own keys)."""
    if not isinstance(meta, Mapping):
        return {}
    return {key: meta[key] for key in TRACE_KEYS if isinstance(meta.get(key), str)}


def header(headers: Any, name: str) -> str | None:
    """A header's value from a mapping of headers (Starlette's is case-insensitive)."""
    if not isinstance(headers, Mapping):
        return None
    value = headers.get(name)
    return value if isinstance(value, str) and value else None

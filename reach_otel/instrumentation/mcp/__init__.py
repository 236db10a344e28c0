"""MCP instrumentation (the ``mcp`` SDK, client and server; ``MCPServer``, formerly FastMCP, included).

Server: rides the SDK's own tracing hook — the ``OpenTelemetryMiddleware`` every ``Server`` lists
first in ``Server.middleware`` — by taking its place, so each request has one SERVER span, ours.
Client: the SDK has no outbound hook, so its dispatchers' ``send_raw_request`` is wrapped (the
SDK's own CLIENT span for the request is folded into ours), its ``_meta`` injection goes through
reach_otel's, and a stdio server it starts inherits reach_otel's configuration.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from reach_otel.instrumentation._base import handler_ref
from reach_otel.instrumentation.mcp import client, server, stdio_env
from reach_otel.instrumentation.mcp.package import _instruments

_DISPATCHER = "mcp.shared.jsonrpc_dispatcher"
_DIRECT = "mcp.shared.direct_dispatcher"
_MIDDLEWARE = "mcp.server._otel"
_HTTP = "mcp.client.streamable_http"
_STDIO = "mcp.client.stdio"
_SESSION_ID_STEPS = ("_prepare_headers", "_maybe_extract_session_id_from_response")


class MCPInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        ref = handler_ref(kwargs.get("tracer_provider"))
        wrap_function_wrapper(_DISPATCHER, "JSONRPCDispatcher.send_raw_request", client.send_wrapper(ref))
        wrap_function_wrapper(_DISPATCHER, "otel_span", client.span_wrapper())
        wrap_function_wrapper(_DISPATCHER, "inject_trace_context", client.inject_wrapper())
        wrap_function_wrapper(_DIRECT, "DirectDispatcher.send_raw_request", client.send_wrapper(ref))
        for step in _SESSION_ID_STEPS:
            wrap_function_wrapper(_HTTP, f"StreamableHTTPTransport.{step}", client.session_id_wrapper())
        wrap_function_wrapper(_STDIO, "_create_platform_compatible_process", stdio_env.process_wrapper())
        wrap_function_wrapper(_MIDDLEWARE, "OpenTelemetryMiddleware.__call__", server.middleware_wrapper(ref))

    def _uninstrument(self, **kwargs: Any) -> None:
        import mcp.client.stdio as stdio
        import mcp.client.streamable_http as http
        import mcp.server._otel as middleware
        import mcp.shared.direct_dispatcher as direct
        import mcp.shared.jsonrpc_dispatcher as dispatcher

        unwrap(dispatcher.JSONRPCDispatcher, "send_raw_request")
        unwrap(dispatcher, "otel_span")
        unwrap(dispatcher, "inject_trace_context")
        unwrap(direct.DirectDispatcher, "send_raw_request")
        for step in _SESSION_ID_STEPS:
            unwrap(http.StreamableHTTPTransport, step)
        unwrap(stdio, "_create_platform_compatible_process")
        unwrap(middleware.OpenTelemetryMiddleware, "__call__")


__all__ = ["MCPInstrumentor"]

"""The server side of MCP: a SERVER span per inbound request, continuing the caller's trace.

The SDK's hook is its context-tier middleware: every ``Server`` (``MCPServer`` included) ships its
own ``OpenTelemetryMiddleware`` first in ``Server.middleware``. We take that middleware's place
rather than adding a second span: its ``__call__`` is replaced while instrumented, so a server built
before or after ``instrument()`` gets one span per request, from our handler. The parent is the
context in ``params._meta`` (``traceparent``, ``tracestate``, and baggage with our hop state and
session ids); the ambient context — the HTTP request's span on streamable HTTP — is a link.
Notifications pass through untraced: they carry no trace context and would each be a lone trace.
A server that removed the SDK's middleware (its opt-out of tracing) stays untraced.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind

from reach_otel import semconv as sc
from reach_otel._safety import safe
from reach_otel.handler import adopt_session, suppressed
from reach_otel.instrumentation._base import HandlerRef
from reach_otel.instrumentation.mcp import extract, spans

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]


def _session_id(ctx: Any) -> str | None:
    # The connection's id (known from ``initialize`` on); else the request's header.
    connection = getattr(getattr(ctx, "session", None), "_connection", None)
    session_id = getattr(connection, "session_id", None)
    if isinstance(session_id, str) and session_id:
        return session_id
    return extract.header(getattr(getattr(ctx, "request", None), "headers", None), extract.SESSION_ID_HEADER)


def parent_context(meta: Any, ambient: otel_context.Context) -> otel_context.Context:
    """The caller's context from ``_meta`` (W3C fields only), holding the caller's session ids."""
    fields = extract.trace_fields(meta)
    return adopt_session(propagate.extract(fields, context=ambient)) if fields else ambient


@safe
def _start(ref: HandlerRef, ctx: Any) -> spans.Call | None:
    method = getattr(ctx, "method", None)
    if suppressed() or getattr(ctx, "request_id", None) is None or not isinstance(method, str):
        return None
    ambient = otel_context.get_current()
    parent = parent_context(getattr(ctx, "meta", None), ambient)
    params = getattr(ctx, "params", None)
    attrs = {
        sc.JSONRPC_REQUEST_ID: str(ctx.request_id),
        sc.MCP_PROTOCOL_VERSION: getattr(ctx, "protocol_version", None),
        sc.MCP_SESSION_ID: _session_id(ctx),
        sc.NETWORK_TRANSPORT: "tcp" if getattr(ctx, "request", None) is not None else None,
    }
    call = spans.start(ref(), SpanKind.SERVER, method, params, attrs, parent)
    if call is not None and parent is not ambient:
        _link_transport(call, ambient, parent)
    return call


@safe
def _link_transport(call: spans.Call, ambient: otel_context.Context, parent: otel_context.Context) -> None:
    """The MCP span's parent is the caller's; the transport's span (an HTTP request) is a link."""
    transport = trace.get_current_span(ambient).get_span_context()
    if transport.is_valid and transport != trace.get_current_span(parent).get_span_context():
        call.inv.span.add_link(transport)


def middleware_wrapper(ref: HandlerRef) -> Wrapper:
    """``OpenTelemetryMiddleware.__call__(ctx, call_next)``: our span instead of the SDK's."""

    async def __call__(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        ctx = args[0] if args else kwargs.get("ctx")
        call_next = args[1] if len(args) > 1 else kwargs.get("call_next")
        if call_next is None:  # not the shape we know: the SDK's own middleware, untouched
            return await wrapped(*args, **kwargs)
        call = _start(ref, ctx)
        if call is None:
            return await call_next(ctx)
        token = call.inv.enter()
        try:
            result = await call_next(ctx)
        except BaseException as exc:
            spans.fail(call, exc)
            raise
        finally:
            call.inv.exit(token)
        spans.finish(call, result)
        return result

    return __call__

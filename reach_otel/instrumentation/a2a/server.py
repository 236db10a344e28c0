"""The server side of A2A: one SERVER span per request, continuing the caller's trace.

The SDK's server hook is its request handler (every binding — JSON-RPC, REST, gRPC — calls the
same ``on_*`` methods, which its own telemetry decorates), so those are wrapped. When the HTTP
request already has a server span (reach_otel's Starlette instrumentation, FastAPI's own, or
another), that span *is* the A2A request's: it is renamed ``{a2a.method.name}`` and given the A2A
attributes, never a second SERVER span. Otherwise ours is made, its parent taken from the request
headers the SDK keeps in ``ServerCallContext.state["headers"]`` — over gRPC, from the request's
metadata (``state["grpc_context"]``), where the client's transport puts the same headers
(traceparent and baggage with the caller's hop state and session ids).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind

from reach_otel import semconv as sc
from reach_otel._safety import safe
from reach_otel.handler import suppressed
from reach_otel.instrumentation._base import HandlerRef
from reach_otel.instrumentation.a2a import calls, extract, sdk
from reach_otel.propagation import extract as extract_context

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]


def _http_server_span(span: Span) -> bool:
    return bool(getattr(span, "kind", None) == SpanKind.SERVER and span.is_recording())


def _caller_context(call_context: Any, ctx: otel_context.Context) -> otel_context.Context:
    """The caller's context from the request headers the SDK kept (or, over gRPC, the request's
    metadata), when nothing continued it yet."""
    if trace.get_current_span(ctx).get_span_context().is_valid:
        return ctx
    state = getattr(call_context, "state", None)
    if not isinstance(state, Mapping):
        return ctx
    headers = state.get("headers")
    if not isinstance(headers, Mapping):
        headers = _grpc_metadata(state.get("grpc_context"))
    return extract_context(headers, ctx) if headers else ctx


def _grpc_metadata(grpc_context: Any) -> dict[str, str] | None:
    """The text entries of a gRPC request's metadata: the gRPC binding keeps the ServicerContext in
    ``state["grpc_context"]``, not headers; the client's transport sent our trace headers there."""
    read = getattr(grpc_context, "invocation_metadata", None)
    if read is None:
        return None
    return {str(key): value for key, value in read() or () if isinstance(value, str)}


@safe
def _start(
    ref: HandlerRef, method: str, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> calls.Call | None:
    ctx = otel_context.get_current()
    if suppressed(ctx) or calls.current_call(ctx) is not None:
        return None
    params = args[0] if args else kwargs.get("params")
    call_context = args[1] if len(args) > 1 else kwargs.get("context")
    attrs = dict(extract.request_attributes(method, params))
    attrs.update(extract.wire_attributes(call_context))
    name = extract.card_name(getattr(instance, "_agent_card", None))
    if name:
        attrs[sc.A2A_AGENT_NAME] = name
    current = trace.get_current_span(ctx)
    if _http_server_span(current):
        current.update_name(method)
        current.set_attributes(attrs)
        return calls.Call(current, ctx, method, None)
    inv = ref().start_http(method, SpanKind.SERVER, attrs, _caller_context(call_context, ctx))
    return None if inv is None else calls.Call(inv.span, inv.ctx, method, inv)


def call_wrapper(ref: HandlerRef, method: str) -> Wrapper:
    """A request handler method answering once (``on_message_send``, ``on_get_task``...)."""

    async def call(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        original = sdk.undecorated(wrapped)
        live = _start(ref, method, instance, args, kwargs)
        if live is None:
            return await original(*args, **kwargs)
        return await calls.run(live, original, args, kwargs, live.ctx)

    return call


def stream_wrapper(ref: HandlerRef, method: str) -> Wrapper:
    """A request handler method answering with a stream of events (``on_message_send_stream``...)."""

    def call(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        original = sdk.undecorated(wrapped)
        live = _start(ref, method, instance, args, kwargs)
        if live is None:
            return original(*args, **kwargs)
        try:
            events = original(*args, **kwargs)
        except BaseException as exc:
            live.fail(exc)
            raise
        return calls.stream(live, events, live.ctx)

    return call

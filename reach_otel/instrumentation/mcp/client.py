"""The client side of MCP: a CLIENT span per outgoing request, its trace context in ``params._meta``.

The SDK has no outbound hook (its dispatcher opens a span of its own and injects ``traceparent``
itself), so the dispatcher's send is wrapped: our span starts first, the SDK's span for the same
request is folded into it (its attributes and error status land on ours; no second span), and its
injection goes through :func:`reach_otel.inject`, which adds our hop state and session ids as
baggage next to the app's own ``_meta`` keys. The streamable-HTTP transport tells the span its
``mcp.session.id``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.trace import Span, SpanKind

from reach_otel import semconv as sc
from reach_otel._safety import safe
from reach_otel.handler import current_agent, suppressed
from reach_otel.instrumentation._base import HandlerRef
from reach_otel.instrumentation.mcp import extract, spans
from reach_otel.propagation import inject

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]


@safe
def _start(ref: HandlerRef, args: tuple[Any, ...], kwargs: dict[str, Any]) -> spans.Call | None:
    if suppressed():
        return None
    method = args[0] if args else kwargs.get("method")
    if not isinstance(method, str):
        return None
    params = args[1] if len(args) > 1 else kwargs.get("params")
    opts = args[2] if len(args) > 2 else kwargs.get("opts")
    ctx = otel_context.get_current()
    agent = current_agent(ctx) if method == sc.MCP_TOOLS_CALL else None
    version = extract.requested_protocol_version(method, params, opts)
    return spans.start(ref(), SpanKind.CLIENT, method, params, {sc.MCP_PROTOCOL_VERSION: version}, ctx, agent)


def send_wrapper(ref: HandlerRef) -> Wrapper:
    """``Dispatcher.send_raw_request(method, params, opts)``: the request's CLIENT span around it."""

    async def send_raw_request(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        call = _start(ref, args, kwargs)
        if call is None:
            return await wrapped(*args, **kwargs)
        token = call.inv.enter()
        try:
            outcome = await wrapped(*args, **kwargs)
        except BaseException as exc:
            spans.fail(call, exc)
            raise
        finally:
            call.inv.exit(token)
        spans.finish(call, outcome)
        return outcome

    return send_raw_request


class _Joined:
    """What the SDK's ``with otel_span(...) as span`` gets inside our send: our span, its attributes
    copied onto it. A plain class: this runs once per request, and a generator context manager
    costs several times more."""

    __slots__ = ("attributes", "call")

    def __init__(self, call: spans.Call, attributes: Any) -> None:
        self.call = call
        self.attributes = attributes

    def __enter__(self) -> Span:
        _copy_attributes(self.call, self.attributes)
        return self.call.inv.span

    def __exit__(self, *exc: object) -> None:
        return None


@safe
def _copy_attributes(call: spans.Call, attributes: Any) -> None:
    if isinstance(attributes, Mapping) and call.inv.span.is_recording():
        call.inv.span.set_attributes({str(k): v for k, v in attributes.items() if v is not None})


def span_wrapper() -> Wrapper:
    """The SDK's ``otel_span`` inside a send we already trace: our span, not a second one."""

    def otel_span(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        call = spans.current_call()
        if call is None or call.joined or kwargs.get("kind", SpanKind.CLIENT) != SpanKind.CLIENT:
            return wrapped(*args, **kwargs)
        call.joined = True
        return _Joined(call, kwargs.get("attributes"))

    return otel_span


@safe(default=False)
def _inject(meta: Any) -> bool:
    if not isinstance(meta, MutableMapping):
        return False
    meta.update(inject({}))
    return True


def inject_wrapper() -> Wrapper:
    """The SDK's ``inject_trace_context(meta)``: ours, with hop state and session ids in baggage."""

    def inject_trace_context(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if not _inject(args[0] if args else kwargs.get("meta")):
            return wrapped(*args, **kwargs)
        return None

    return inject_trace_context


@safe
def _note_session(transport: Any) -> None:
    call = spans.current_call()
    session_id = getattr(transport, "session_id", None)
    if call is not None and isinstance(session_id, str) and call.inv.span.is_recording():
        call.inv.span.set_attribute(sc.MCP_SESSION_ID, session_id)


def session_id_wrapper() -> Wrapper:
    """A streamable-HTTP transport step that knows the session id: the current request's span gets it."""

    def with_session(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        result = wrapped(*args, **kwargs)
        _note_session(instance)
        return result

    return with_session

"""The client side of A2A: a CLIENT span per request, and a handoff for a message an agent sends.

The SDK's client hook for this is its transports (the methods its own telemetry decorates), so
each transport method is wrapped — JSON-RPC, REST and gRPC alike. A message sent from inside an
agent span is a ``delegate`` handoff to the AgentCard's agent, started through the handler (hop
count, loop detection and ``on_loop`` as for any handoff), with the request's span under it. The
trace context — traceparent, tracestate, and baggage with our hop state and session ids — goes in
the call's ``ServiceParameters``, which the SDK sends as HTTP headers (gRPC metadata). The HTTP
client below the request makes no span of its own and injects nothing: instrumentation is
suppressed for the transport's own work, so one request is one CLIENT span with one set of headers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY
from opentelemetry.trace import SpanKind

from reach_otel import semconv as sc
from reach_otel._safety import safe
from reach_otel.handler import current_agent, suppressed
from reach_otel.instrumentation._base import HandlerRef
from reach_otel.instrumentation.a2a import calls, extract, sdk
from reach_otel.invocations import Handoff
from reach_otel.propagation import inject

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]


def _request(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return args[0] if args else kwargs.get("request")


@safe
def _handoff_target(method: str, instance: Any) -> tuple[str, str] | None:
    """(source agent, target agent) when this request is an agent sending a message to another."""
    if method not in extract.SENDS or suppressed():
        return None
    agent = current_agent()
    if agent is None:
        return None
    return agent.name, extract.target_name(instance)


@safe
def _message_id(request: Any) -> str | None:
    return dict(extract.request_attributes("", request)).get(sc.A2A_MESSAGE_ID)


def _start_handoff(ref: HandlerRef, method: str, instance: Any, request: Any) -> Handoff | None:
    """The handoff; raises ``HopLimitExceeded`` only when the app asked for it (``on_loop="raise"``)."""
    pair = _handoff_target(method, instance)
    if pair is None:
        return None
    source, target = pair
    return ref().start_handoff(
        source, target, mode="delegate", reason=f"a2a {method}", idempotency_key=_message_id(request)
    )


@safe
def _start(
    ref: HandlerRef, method: str, instance: Any, request: Any, handoff: Handoff | None
) -> calls.Call | None:
    parent = handoff.ctx if handoff is not None else otel_context.get_current()
    if suppressed(parent):
        return None
    attrs = dict(extract.request_attributes(method, request))
    attrs[sc.A2A_AGENT_NAME] = extract.target_name(instance)
    attrs.update(extract.server_attributes(instance))
    agent = current_agent(parent)
    if agent is not None:
        attrs[sc.REACH_AGENT_NAME] = agent.name
    inv = ref().start_http(method, SpanKind.CLIENT, attrs, parent)
    if inv is None:
        return None
    call = calls.Call(inv.span, inv.ctx, method, inv)
    call.handoff = handoff
    return call


@safe
def _with_trace_context(call: calls.Call, kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """``kwargs`` whose ``context`` (a copy of the caller's) carries our trace headers."""
    from a2a.client.client import ClientCallContext

    headers: dict[str, str] = inject({}, call.ctx)
    if not headers:
        return None
    given = kwargs.get("context")
    if given is None:
        context = ClientCallContext(service_parameters=headers)
    else:
        context = given.model_copy()
        context.service_parameters = {**(given.service_parameters or {}), **headers}
    return {**kwargs, "context": context}


def _transport_context(call: calls.Call) -> otel_context.Context:
    """The call's context with instrumentation suppressed: the HTTP client below adds nothing."""
    return otel_context.set_value(_SUPPRESS_INSTRUMENTATION_KEY, True, call.ctx)


def _prepare(
    ref: HandlerRef, method: str, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[calls.Call | None, dict[str, Any]]:
    request = _request(args, kwargs)
    handoff = _start_handoff(ref, method, instance, request)
    call = _start(ref, method, instance, request, handoff)
    if call is None:
        if handoff is not None:
            handoff.stop()
        return None, kwargs
    return call, _with_trace_context(call, kwargs) or kwargs


def call_wrapper(ref: HandlerRef, method: str) -> Wrapper:
    """A transport method answering once (``send_message``, ``get_task``...)."""

    async def call(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        original = sdk.undecorated(wrapped)
        live, kwargs = _prepare(ref, method, instance, args, kwargs)
        if live is None:
            return await original(*args, **kwargs)
        return await calls.run(live, original, args, kwargs, _transport_context(live))

    return call


def stream_wrapper(ref: HandlerRef, method: str) -> Wrapper:
    """A transport method answering with a stream (``send_message_streaming``, ``subscribe``)."""

    def call(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        original = sdk.undecorated(wrapped)
        live, kwargs = _prepare(ref, method, instance, args, kwargs)
        if live is None:
            return original(*args, **kwargs)
        try:
            events = original(*args, **kwargs)
        except BaseException as exc:
            live.fail(exc)
            raise
        return calls.stream(live, events, _transport_context(live))

    return call

"""One MCP span, client or server: started through the handler, ended with the request's outcome.

Both sides share this: the §13 attributes, the caller's session ids, tool content when capture is
on (through the handler's redactor), and the outcome — a JSON-RPC error code, a tool result with
``isError`` (``error.type=tool_error``), or any other exception's class.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.trace import SpanKind, Status, StatusCode

from reach_otel import semconv as sc
from reach_otel._safety import safe
from reach_otel.handler import SessionInfo, TelemetryHandler, current_session
from reach_otel.instrumentation.mcp import extract
from reach_otel.invocations import AgentInvocation, Invocation

_CALL_KEY = otel_context.create_key("reach_otel.mcp.call")


class Call:
    """A live MCP span and what its end needs: the method, the agent it counts for."""

    __slots__ = ("agent", "inv", "joined", "method")

    def __init__(self, inv: Invocation, method: str, agent: AgentInvocation | None) -> None:
        self.inv = inv
        self.method = method
        self.agent = agent
        self.joined = False  # True once the SDK's own span for this request was folded into it

    @property
    def capture(self) -> bool:
        return self.inv.handler.settings.capture_content


def current_call(ctx: otel_context.Context | None = None) -> Call | None:
    value = (ctx if ctx is not None else otel_context.get_current()).get(_CALL_KEY)
    return value if isinstance(value, Call) else None


def session_attributes(session: SessionInfo | None) -> dict[str, Any]:
    if session is None:
        return {}
    attrs: dict[str, Any] = {}
    if session.session_id:
        attrs[sc.GEN_AI_CONVERSATION_ID] = session.session_id
    if session.user_id:
        attrs[sc.USER_ID] = session.user_id
    if session.task_id:
        attrs[sc.REACH_TASK_ID] = session.task_id
    return attrs


@safe
def start(
    handler: TelemetryHandler,
    kind: SpanKind,
    method: str,
    params: Any,
    attributes: Mapping[str, Any],
    ctx: otel_context.Context,
    agent: AgentInvocation | None = None,
) -> Call | None:
    """Start ``{method} {target}`` under ``ctx``; the returned call's ``inv.ctx`` makes it current."""
    attrs = dict(extract.request_attributes(method, params))
    attrs.update({k: v for k, v in attributes.items() if v is not None})
    attrs.update(session_attributes(current_session(ctx)))
    if agent is not None:
        attrs[sc.REACH_AGENT_NAME] = agent.name
    inv = handler.start_http(sc.mcp_span_name(method, extract.target(method, params)), kind, attrs, ctx)
    if inv is None:
        return None
    call = Call(inv, method, agent)
    inv.ctx = otel_context.set_value(_CALL_KEY, call, inv.ctx)
    if method == sc.MCP_TOOLS_CALL and call.capture:
        _content(call, sc.GEN_AI_TOOL_CALL_ARGUMENTS, extract.tool_arguments, params)
    return call


@safe
def _content(call: Call, key: str, pick: Any, value: Any) -> None:
    """Tool arguments or result as JSON, truncated and redacted by the handler (capture on only)."""
    if call.inv.span.is_recording():
        picked = pick(value)
        if picked is not None:
            call.inv.span.set_attribute(key, call.inv.handler.content_json(picked))


@safe
def set_attribute(call: Call | None, key: str, value: Any) -> None:
    if call is not None and value is not None:
        call.inv.span.set_attribute(key, value)


@safe
def finish(call: Call, result: Any) -> None:
    """End a request that was answered: ``isError`` makes a tool call an error, else the span is OK."""
    span = call.inv.span
    try:
        set_attribute(call, sc.MCP_PROTOCOL_VERSION, extract.negotiated_protocol_version(call.method, result))
        if extract.is_tool_error(call.method, result):
            # The tool's own words, as a raised exception's are kept: the status and an event.
            message = extract.tool_error_message(result)
            span.set_attribute(sc.ERROR_TYPE, sc.MCP_TOOL_ERROR)
            span.set_status(Status(StatusCode.ERROR, message or None))
            if message:
                span.add_event(
                    sc.EXCEPTION_EVENT, {sc.EXCEPTION_TYPE: sc.MCP_TOOL_ERROR, sc.EXCEPTION_MESSAGE: message}
                )
        elif call.method == sc.MCP_TOOLS_CALL and call.capture:
            _content(call, sc.GEN_AI_TOOL_CALL_RESULT, extract.tool_result, result)
    finally:
        _end(call, call.inv.stop)


@safe
def _coded(exc: BaseException) -> tuple[str, str] | None:
    return extract.error_code(exc)


@safe
def fail(call: Call, exc: BaseException) -> None:
    """End a request that raised: a JSON-RPC error by its code, anything else by its class."""
    coded = _coded(exc)
    if coded is None:
        _end(call, lambda: call.inv.fail(exc))
        return
    code, message = coded
    span = call.inv.span
    try:
        span.set_attributes({sc.ERROR_TYPE: code, sc.RPC_RESPONSE_STATUS_CODE: code})
        span.set_status(Status(StatusCode.ERROR, message[:1024] or None))
        if code != str(extract.INVALID_PARAMS):  # a validation error's text quotes the client's input
            span.record_exception(exc)
    finally:
        _end(call, call.inv.stop)


def _end(call: Call, end: Callable[[], Any]) -> None:
    try:
        if call.agent is not None and call.method == sc.MCP_TOOLS_CALL:
            call.agent.add_tool_call()
    finally:
        end()

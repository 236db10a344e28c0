"""The OpenAI Agents SDK tracing processor: maps the SDK's traces and spans onto §3 spans.

Agent → ``invoke_agent``, function → ``execute_tool``, handoff → ``handoff`` (a takeover),
generation/response → ``chat`` (skipped while reach_otel's own OpenAI instrumentation is active,
which makes that span itself). Each child starts with its SDK parent's context attached, so one
OTel trace holds the whole SDK trace; an SDK trace with no enclosing OTel span gets a workflow root.
Every step runs under ``safe``: the SDK run never sees our failures.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from agents.tracing import (
    AgentSpanData,
    FunctionSpanData,
    GenerationSpanData,
    HandoffSpanData,
    ResponseSpanData,
    Span,
    Trace,
    TracingProcessor,
)
from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace

from reach_otel import semconv as sc
from reach_otel._safety import safe
from reach_otel.errors import error_type
from reach_otel.handler import TelemetryHandler, get_handler
from reach_otel.instrumentation.openai_agents.extract import (
    json_or_text,
    output_messages,
    requested_tools,
    server_of,
)
from reach_otel.invocations import Invocation, LLMInvocation, ToolInvocation

HandlerRef = Callable[[], TelemetryHandler]
_OPENAI_INSTRUMENTATION = "reach_otel.instrumentation.openai"
_PROVIDER = "openai"


class SDKSpanError(Exception):
    """An error the Agents SDK reported on a span; the SDK keeps only its message, not the exception."""


@dataclass
class _Entry:
    """What we hold for one SDK trace or span until it ends."""

    inv: Invocation | None  # our span; None when the SDK span is not mapped (it is transparent)
    ctx: otel_context.Context  # the context the SDK span's children start in
    handler: TelemetryHandler
    top: _Entry | None = None  # the trace entry, for a span directly under it (transparent levels skipped)
    token: object | None = None  # set when we made ``inv`` current in the starting Context
    deferred_handoff: bool = False
    failure: tuple[BaseException, str] | None = None  # on a trace: how its last top-level span failed

    def child(self, inv: Invocation | None, handler: TelemetryHandler) -> _Entry:
        """The entry of a span started under this one (a transparent parent passes ``top`` on)."""
        top = self.top if self.inv is None else None
        return _Entry(inv, inv.ctx if inv is not None else self.ctx, handler, top)


def openai_instrumentation_active() -> bool:
    """True while reach_otel's OpenAI instrumentation is applied: it then creates the chat spans."""
    module = sys.modules.get(_OPENAI_INSTRUMENTATION)  # never imported → never instrumented
    return bool(module is not None and getattr(module, "is_active", lambda: False)())


@contextmanager
def _attached(ctx: otel_context.Context) -> Iterator[None]:
    token = otel_context.attach(ctx)
    try:
        yield
    finally:
        otel_context.detach(token)


def _detach_if_safe(entry: _Entry) -> None:
    """Undo the attach made at span start only when it is on top, in the very same Context.

    ``ContextVar.reset`` refuses a token made in another Context (ValueError): calling it
    directly, rather than ``context.detach``, keeps that expected case out of the error log.
    """
    token, entry.token = entry.token, None
    if token is None or entry.inv is None or otel_context.get_current() is not entry.inv.ctx:
        return
    var = getattr(token, "var", None)
    if var is None:  # another runtime context implementation: only its own detach can do it
        otel_context.detach(token)  # type: ignore[arg-type]
        return
    with contextlib.suppress(ValueError, RuntimeError):  # ended in another Context, or already reset
        var.reset(token)


@safe
def _record_result(inv: Invocation, data: Any) -> Any:
    """Record what the SDK span data says about the call; returns a tool's result."""
    if isinstance(inv, ToolInvocation) and isinstance(data, FunctionSpanData):
        inv.set_arguments(json_or_text(data.input))
        return json_or_text(data.output)
    if isinstance(inv, LLMInvocation):
        _record_llm(inv, data)
    return None


@safe
def _span_error(span: Span[Any]) -> tuple[BaseException, str] | None:
    """The exception and ``error.type`` for a span the SDK marked as failed, else None."""
    error = span.error
    if not error:
        return None
    exc = sys.exc_info()[1]  # set when the span ends because an exception is propagating
    if isinstance(exc, Exception):
        cause = exc.__cause__ if isinstance(exc.__cause__, Exception) else exc
        code = getattr(cause, "code", None)  # a provider's error code wins over the class name
        return cause, code if isinstance(code, str) and code else error_type(cause)
    message = str(error.get("message") or "error")
    detail = (error.get("data") or {}).get("error")
    return SDKSpanError(f"{message}: {detail}" if detail else message), message


class ReachTracingProcessor(TracingProcessor):
    """Added with ``agents.add_trace_processor``; inert after ``deactivate()`` (the SDK has no remove)."""

    def __init__(self, handler: HandlerRef = get_handler) -> None:
        self._handler = handler
        self.active = True
        # Plain dict set/pop are atomic under the GIL; the SDK calls us from any thread or task.
        self._traces: dict[str, _Entry] = {}
        self._spans: dict[str, _Entry] = {}

    def activate(self, handler: HandlerRef) -> None:
        self._handler = handler
        self.active = True

    def deactivate(self) -> None:
        """Stop mapping new traces and spans; those already open still end."""
        self.active = False

    # -- traces ----------------------------------------------------------------------------------
    @safe
    def on_trace_start(self, trace: Trace) -> None:
        if not self.active:
            return
        handler = self._handler()
        ctx = otel_context.get_current()
        inv = None
        if not otel_trace.get_current_span(ctx).get_span_context().is_valid:
            inv = handler.start_workflow(trace.name)  # no enclosing span: the SDK trace is the request
        self._traces[trace.trace_id] = _Entry(inv, inv.ctx if inv is not None else ctx, handler)

    @safe
    def on_trace_end(self, trace: Trace) -> None:
        entry = self._traces.pop(trace.trace_id, None)
        if entry is None or entry.inv is None:
            return
        if entry.failure is not None:  # the run failed: its last agent did
            entry.inv.fail(*entry.failure)
        else:
            entry.inv.stop()

    # -- spans -----------------------------------------------------------------------------------
    def _parent(self, span: Span[Any]) -> _Entry:
        parent = self._spans.get(span.parent_id) if span.parent_id else None
        if parent is not None:
            return parent
        trace_entry = self._traces.get(span.trace_id)
        if trace_entry is None:  # the trace started before we were added: nest under whatever is current
            trace_entry = _Entry(None, otel_context.get_current(), self._handler())
        return _Entry(None, trace_entry.ctx, trace_entry.handler, trace_entry)

    @safe
    def on_span_start(self, span: Span[Any]) -> None:
        if not self.active:
            return
        parent = self._parent(span)
        with _attached(parent.ctx):
            entry = self._start(span, parent)
        if entry.inv is not None:
            # Current from here to on_span_end, so @reach_otel.tool functions and our OpenAI
            # instrumentation called inside nest under it; _detach_if_safe undoes it.
            entry.token = otel_context.attach(entry.inv.ctx)
        self._spans[span.span_id] = entry

    def _start(self, span: Span[Any], parent: _Entry) -> _Entry:
        data, handler = span.span_data, parent.handler
        inv: Invocation | None = None
        if isinstance(data, AgentSpanData):
            inv = handler.start_agent(data.name)
        elif isinstance(data, FunctionSpanData):
            inv = handler.start_tool(data.name)
        elif isinstance(data, HandoffSpanData):
            if data.to_agent is None:  # the SDK learns the target while the handoff runs
                entry = parent.child(None, handler)
                entry.deferred_handoff = True
                return entry
            inv = handler.start_handoff(data.from_agent, data.to_agent, mode="takeover")
        elif isinstance(data, (GenerationSpanData, ResponseSpanData)) and not openai_instrumentation_active():
            model = data.model if isinstance(data, GenerationSpanData) else None
            config = data.model_config if isinstance(data, GenerationSpanData) else None
            address, port = server_of(config)
            inv = handler.start_llm(model, _PROVIDER, server_address=address, server_port=port)
        return parent.child(inv, handler)

    @safe
    def on_span_end(self, span: Span[Any]) -> None:
        entry = self._spans.pop(span.span_id, None)
        if entry is None:
            return
        _detach_if_safe(entry)
        data = span.span_data
        if entry.deferred_handoff and isinstance(data, HandoffSpanData):
            if not self.active or not data.to_agent:
                return
            with _attached(entry.ctx):
                entry.inv = entry.handler.start_handoff(data.from_agent, data.to_agent, mode="takeover")
        inv = entry.inv
        if inv is None:
            return
        result = _record_result(inv, data)  # under safe: whatever fails there, the span still ends
        failed = _span_error(span)
        if entry.top is not None:
            entry.top.failure = failed
        if failed is not None:
            inv.fail(failed[0], failed[1])
        elif isinstance(inv, LLMInvocation):
            inv.stop()  # the response was recorded above, content included
        else:
            inv.stop(result)

    # -- lifecycle -------------------------------------------------------------------------------
    def shutdown(self) -> None:
        self.deactivate()

    def force_flush(self) -> None:
        """Nothing buffered here: spans go to the OpenTelemetry provider's own processors."""


def _record_llm(inv: LLMInvocation, data: Any) -> None:
    """Model, usage, requested tools and (with capture on) messages of a generation or response span."""
    output: Any = None
    if isinstance(data, ResponseSpanData):
        response = data.response
        if response is not None:
            model = getattr(response, "model", None)
            if isinstance(model, str) and model and inv.span.is_recording():
                inv.span.update_name(sc.llm_span_name(model))  # a response span learns its model last
                inv.span.set_attribute(sc.GEN_AI_REQUEST_MODEL, model)
            inv.set_response(response)
            output = getattr(response, "output", None)
    elif isinstance(data, GenerationSpanData):
        usage = data.usage or {}
        inv.record_usage(usage.get("input_tokens"), usage.get("output_tokens"))
        output = data.output
    else:
        return
    tools = requested_tools(output)
    if tools:
        inv.span.set_attribute(sc.REACH_LLM_TOOL_CALLS_REQUESTED, tools)
    inv.set_request_messages(data.input)
    messages = output_messages(output) if inv.capture else None
    if messages and inv.span.is_recording():
        inv.span.set_attribute(sc.GEN_AI_OUTPUT_MESSAGES, inv.handler.content_json(messages))

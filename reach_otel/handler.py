"""The TelemetryHandler: the only place reach_otel creates spans.

Decorators, context managers and the auto-instrumentations all go through ``start_*`` here, which
builds the §3 attributes, keeps hop state per trace and returns an
:class:`~reach_otel.invocations.Invocation` that the caller activates and ends. Under
``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` (``_shape``) it adds what the newest
conventions ask for: the caller of a remote agent call, and the transfer on a tool that hands off.
"""

from __future__ import annotations

import contextlib
import random
import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry import baggage, trace
from opentelemetry import context as otel_context
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY
from opentelemetry.trace import SpanKind, TracerProvider

from reach_otel import _shape
from reach_otel import handoff_state as hf
from reach_otel import semconv as sc
from reach_otel._safety import logger, safe
from reach_otel.config import Settings
from reach_otel.errors import HopLimitExceeded
from reach_otel.invocations import (
    AgentInvocation,
    Handoff,
    Invocation,
    LLMInvocation,
    ToolInvocation,
    WorkflowInvocation,
)
from reach_otel.redact import Redactor, to_json

_AGENT_KEY = otel_context.create_key("reach_otel.agent")
_LLM_KEY = otel_context.create_key("reach_otel.llm")
_SESSION_KEY = otel_context.create_key("reach_otel.session")
# Newest shape only: the nearest agent or workflow, (gen_ai.caller.type, name), and the tool running.
_CALLER_KEY = otel_context.create_key("reach_otel.caller")
_TOOL_KEY = otel_context.create_key("reach_otel.tool")

INSTRUMENTATION_NAME = "reach_otel"


@dataclass(frozen=True)
class SessionInfo:
    session_id: str | None = None
    user_id: str | None = None
    task_id: str | None = None


def current_agent(ctx: otel_context.Context | None = None) -> AgentInvocation | None:
    value = (ctx if ctx is not None else otel_context.get_current()).get(_AGENT_KEY)
    return value if isinstance(value, AgentInvocation) else None


def current_llm(ctx: otel_context.Context | None = None) -> LLMInvocation | None:
    value = (ctx if ctx is not None else otel_context.get_current()).get(_LLM_KEY)
    return value if isinstance(value, LLMInvocation) else None


#: Where each id of a session travels in W3C baggage, in SessionInfo's field order.
_SESSION_BAGGAGE = (sc.BAGGAGE_SESSION_ID, sc.BAGGAGE_USER_ID, sc.BAGGAGE_TASK_ID)


def current_session(ctx: otel_context.Context | None = None) -> SessionInfo | None:
    """The session entered in this process, else the one a caller sent in baggage (bounded ids)."""
    ctx = ctx if ctx is not None else otel_context.get_current()
    value = ctx.get(_SESSION_KEY)
    if isinstance(value, SessionInfo):
        return value
    entries = baggage.get_all(ctx)
    if not entries:
        return None
    ids = [hf.clean_id(entries.get(key)) for key in _SESSION_BAGGAGE]
    return SessionInfo(*ids) if any(ids) else None


def adopt_session(ctx: otel_context.Context) -> otel_context.Context:
    """``ctx`` holding the caller's session from its baggage, so the spans under it look it up cheaply."""
    if ctx.get(_SESSION_KEY) is not None:
        return ctx
    session = current_session(ctx)
    return ctx if session is None else otel_context.set_value(_SESSION_KEY, session, ctx)


def _with_session(info: SessionInfo, ctx: otel_context.Context) -> otel_context.Context:
    """``ctx`` in the session ``info``: for the spans started under it, and in baggage too, so
    inject() carries the ids to the agents this session calls."""
    ctx = otel_context.set_value(_SESSION_KEY, info, ctx)
    for key, value in zip(_SESSION_BAGGAGE, (info.session_id, info.user_id, info.task_id), strict=True):
        ctx = baggage.set_baggage(key, value, ctx) if value else baggage.remove_baggage(key, ctx)
    return ctx


def session_attributes(ctx: otel_context.Context) -> dict[str, Any]:
    """The attributes a span started in ``ctx`` takes from the session entered there (cheap: the
    session a caller sent in baggage is put there where its request enters, by ``adopt_session``)."""
    attrs: dict[str, Any] = {}
    value = ctx.get(_SESSION_KEY)
    if isinstance(value, SessionInfo):
        _session_attributes(value, attrs)
    return attrs


def suppressed(ctx: otel_context.Context | None = None) -> bool:
    return bool((ctx if ctx is not None else otel_context.get_current()).get(_SUPPRESS_INSTRUMENTATION_KEY))


def _session_attributes(session: SessionInfo | None, attrs: dict[str, Any]) -> None:
    if session is None:
        return
    if session.session_id:
        attrs[sc.GEN_AI_CONVERSATION_ID] = session.session_id
    if session.user_id:
        attrs[sc.USER_ID] = session.user_id
    if session.task_id:
        attrs.setdefault(sc.REACH_TASK_ID, session.task_id)


def _caller_attributes(ctx: otel_context.Context, attrs: dict[str, Any]) -> None:
    """``gen_ai.caller.*`` of a remote agent call: the nearest agent or workflow this one runs in."""
    caller = ctx.get(_CALLER_KEY)
    if isinstance(caller, tuple):
        kind, name = caller
    elif (agent := current_agent(ctx)) is not None:
        kind, name = sc.CALLER_AGENT, agent.name
    else:
        return
    attrs[sc.GEN_AI_CALLER_TYPE] = kind
    attrs[sc.GEN_AI_CALLER_NAME] = name


def _transfer_tool(ctx: otel_context.Context, tool: ToolInvocation | None) -> ToolInvocation | None:
    """The tool a handoff is made through: the one given, else ours when it is the current span."""
    if tool is None:
        found = ctx.get(_TOOL_KEY)
        if isinstance(found, ToolInvocation) and trace.get_current_span(ctx) is found.span:
            tool = found
    return tool if tool is not None and tool.span.is_recording() else None


def _mark_transfer(tool: ToolInvocation, source: str, target: str, transfer: str) -> None:
    """The gen_ai.execute_tool.transfer.internal refinement, on the tool span that handed off."""
    attrs: dict[str, Any] = {
        sc.GEN_AI_TRANSFER_MODE: transfer,
        sc.GEN_AI_TRANSFER_TARGET_NAME: target,
        sc.GEN_AI_TRANSFER_TARGET_TYPE: sc.TRANSFER_TARGET_AGENT,
    }
    if tool.agent is not None:  # the source agent; the tool's reach.agent.name says the same
        attrs[sc.GEN_AI_AGENT_NAME] = source
    tool.span.set_attributes(attrs)


class TelemetryHandler:
    """Starts workflow, agent, LLM, tool and handoff spans with the §3 attributes."""

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        settings: Settings | None = None,
        hops: hf.HopRegistry | None = None,
    ) -> None:
        from reach_otel import __version__

        self.settings = settings or Settings()
        self.redactor = Redactor(self.settings.redact_patterns)
        provider = tracer_provider or trace.get_tracer_provider()
        self.tracer = provider.get_tracer(INSTRUMENTATION_NAME, __version__)
        self.hops = hops or hf.HopRegistry()
        _shape.latest()  # the shape is read once, here at init(), and holds for the process

    def content_json(self, value: Any) -> str:
        return to_json(value, self.redactor, self.settings.content_max_chars)

    # -- hop state -----------------------------------------------------------------------------------
    def _hop_state(self, ctx: otel_context.Context, trace_id: int) -> hf.HopState:
        state = self.hops.get(trace_id)
        remote_hops = baggage.get_baggage(sc.BAGGAGE_HOPS, ctx)
        if remote_hops is not None:
            state.merge_remote(
                hf.decode_hops(remote_hops), hf.decode_path(baggage.get_baggage(sc.BAGGAGE_PATH, ctx))
            )
        return state

    # -- workflow & agent ------------------------------------------------------------------------
    @safe
    def start_workflow(self, name: str, *, conversation_id: str | None = None) -> WorkflowInvocation | None:
        """``conversation_id`` (a framework's thread id) is the conversation of every span under the
        workflow, where no session is current; a current session's id wins."""
        ctx = otel_context.get_current()
        if suppressed(ctx):
            return None
        attrs: dict[str, Any] = {sc.GEN_AI_OPERATION_NAME: sc.OP_WORKFLOW, sc.GEN_AI_WORKFLOW_NAME: name}
        session = current_session(ctx)
        if session is None and (conversation := hf.clean_id(conversation_id)):
            session = SessionInfo(conversation)
            ctx = _with_session(session, ctx)
        _session_attributes(session, attrs)
        is_root = not trace.get_current_span(ctx).get_span_context().is_valid
        # The newest conventions keep the workflow its own span, as v1.41.0 has it: invoke_workflow
        # {gen_ai.workflow.name}, INTERNAL (semantic-conventions-genai model/gen-ai/spans.yaml,
        # gen_ai.invoke_workflow.internal), so both shapes start it alike.
        span = self.tracer.start_span(sc.workflow_span_name(name), ctx, SpanKind.INTERNAL, attrs)
        inner = trace.set_span_in_context(span, ctx)
        if _shape.latest():
            inner = otel_context.set_value(_CALLER_KEY, (sc.CALLER_WORKFLOW, name), inner)
        return WorkflowInvocation(self, span, inner, is_root)

    @safe
    def start_agent(
        self,
        name: str,
        *,
        role: str | None = None,
        agent_id: str | None = None,
        description: str | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        start_time: int | None = None,
    ) -> AgentInvocation | None:
        """An agent span; ``start_time`` (ns) dates it back, for a framework that knows it late."""
        ctx = otel_context.get_current()
        if ctx.get(_SUPPRESS_INSTRUMENTATION_KEY):
            return None
        attrs: dict[str, Any] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT,
            sc.GEN_AI_AGENT_NAME: name,
            sc.GEN_AI_AGENT_ID: agent_id or name,
        }
        if role:
            attrs[sc.REACH_AGENT_ROLE] = role
        if description:
            attrs[sc.GEN_AI_AGENT_DESCRIPTION] = description
        session = current_session(ctx)
        _session_attributes(session, attrs)
        latest = _shape.latest()
        if latest and kind == SpanKind.CLIENT:
            _caller_attributes(ctx, attrs)
        parent = trace.get_current_span(ctx).get_span_context()
        state: hf.HopState | None = None
        if parent.is_valid:
            state = self._hop_state(ctx, parent.trace_id)
            state.visit_first(name)
            attrs[sc.REACH_HOP_COUNT] = state.hops
        else:
            attrs[sc.REACH_HOP_COUNT] = 0
        span = self.tracer.start_span(sc.agent_span_name(name), ctx, kind, attrs, start_time=start_time)
        if state is None and baggage.get_baggage(sc.BAGGAGE_HOPS, ctx) is not None:
            # A root agent gets hop state only when baggage brings some; else the first handoff makes it.
            self._hop_state(ctx, span.get_span_context().trace_id).visit_first(name)
        inv = AgentInvocation(self, span, ctx, parent.is_valid is False, name)
        inv.ctx = otel_context.set_value(_AGENT_KEY, inv, trace.set_span_in_context(span, ctx))
        if session is not None and ctx.get(_SESSION_KEY) is None:  # the caller's, from baggage
            inv.ctx = otel_context.set_value(_SESSION_KEY, session, inv.ctx)
        if latest and kind != SpanKind.CLIENT:  # a remote call is not the caller of what it runs
            inv.ctx = otel_context.set_value(_CALLER_KEY, (sc.CALLER_AGENT, name), inv.ctx)
        return inv

    # -- llm & tool ------------------------------------------------------------------------------
    @safe
    def start_llm(
        self,
        model: str | None,
        provider: str,
        *,
        operation: str = sc.OP_CHAT,
        stream: bool | None = None,
        server_address: str | None = None,
        server_port: int | None = None,
        request_attributes: Mapping[str, Any] | None = None,
        unless_nested: bool = False,
    ) -> LLMInvocation | None:
        """An LLM span; ``unless_nested=True`` (instrumentations) declines inside another LLM span."""
        ctx = otel_context.get_current()
        if ctx.get(_SUPPRESS_INSTRUMENTATION_KEY) or (unless_nested and ctx.get(_LLM_KEY) is not None):
            return None
        attrs: dict[str, Any] = {sc.GEN_AI_OPERATION_NAME: operation, sc.GEN_AI_PROVIDER_NAME: provider}
        if model:
            attrs[sc.GEN_AI_REQUEST_MODEL] = model
        if stream is not None:
            attrs[sc.GEN_AI_REQUEST_STREAM] = stream
        if server_address:
            attrs[sc.SERVER_ADDRESS] = server_address
        if server_port:
            attrs[sc.SERVER_PORT] = server_port
        if request_attributes:
            attrs.update({k: v for k, v in request_attributes.items() if v is not None})
        agent = ctx.get(_AGENT_KEY)
        if agent is not None:
            attrs[sc.REACH_AGENT_NAME] = agent.name  # type: ignore[attr-defined]
        session = ctx.get(_SESSION_KEY)
        if session is not None:
            _session_attributes(session, attrs)  # type: ignore[arg-type]
        span = self.tracer.start_span(sc.llm_span_name(model or "", operation), ctx, SpanKind.CLIENT, attrs)
        inv = LLMInvocation(self, span, trace.set_span_in_context(span, ctx), agent)  # type: ignore[arg-type]
        inv.ctx = otel_context.set_value(_LLM_KEY, inv, inv.ctx)
        return inv

    @safe
    def start_tool(
        self, name: str, *, call_id: str | None = None, description: str | None = None
    ) -> ToolInvocation | None:
        ctx = otel_context.get_current()
        if ctx.get(_SUPPRESS_INSTRUMENTATION_KEY):
            return None
        attrs: dict[str, Any] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_TOOL,
            sc.GEN_AI_TOOL_NAME: name,
            sc.GEN_AI_TOOL_CALL_ID: call_id or f"call_{random.getrandbits(64):016x}",
            sc.GEN_AI_TOOL_TYPE: sc.TOOL_TYPE_FUNCTION,
        }
        if description:
            attrs[sc.GEN_AI_TOOL_DESCRIPTION] = description
        agent = ctx.get(_AGENT_KEY)
        if agent is not None:
            attrs[sc.REACH_AGENT_NAME] = agent.name  # type: ignore[attr-defined]
        session = ctx.get(_SESSION_KEY)
        if session is not None:
            _session_attributes(session, attrs)  # type: ignore[arg-type]
        span = self.tracer.start_span(sc.tool_span_name(name), ctx, SpanKind.INTERNAL, attrs)
        inv = ToolInvocation(self, span, trace.set_span_in_context(span, ctx), agent)  # type: ignore[arg-type]
        if _shape.latest():  # a handoff started while this tool runs is a transfer made through it
            inv.ctx = otel_context.set_value(_TOOL_KEY, inv, inv.ctx)
        return inv

    # -- handoff ---------------------------------------------------------------------------------
    def start_handoff(
        self,
        source: str | None,
        target: str,
        *,
        reason: str | None = None,
        mode: str = "delegate",
        task_id: str | None = None,
        handoff_id: str | None = None,
        idempotency_key: str | None = None,
        start_time: int | None = None,
        tool: ToolInvocation | None = None,
    ) -> Handoff | None:
        """Open a handoff span; raises :class:`HopLimitExceeded` only when ``on_loop="raise"``.

        ``start_time`` (ns) dates it back to when the decision was made, for a framework that
        reports it late. ``tool`` is the tool that made it (default: the current span, when it is
        one of our tools), which the newest shape marks as a transfer."""
        started = self._start_handoff(
            source, target, reason, mode, task_id, handoff_id, idempotency_key, start_time, tool
        )
        if started is None:
            return None
        inv, exceeded = started
        if exceeded is not None and self.settings.on_loop == "raise":
            inv.transition("reject")
            inv.fail(exceeded)
            raise exceeded
        return inv

    @safe
    def _start_handoff(
        self,
        source: str | None,
        target: str,
        reason: str | None,
        mode: str,
        task_id: str | None,
        handoff_id: str | None,
        idempotency_key: str | None,
        start_time: int | None = None,
        tool: ToolInvocation | None = None,
    ) -> tuple[Handoff, HopLimitExceeded | None] | None:
        ctx = otel_context.get_current()
        if suppressed(ctx):
            return None
        if source is None:
            agent = current_agent(ctx)
            source = agent.name if agent is not None else "unknown"
        if mode not in hf.MODES:
            logger.debug("reach_otel: handoff mode %r is not one of %s", mode, hf.MODES)
        parent = trace.get_current_span(ctx).get_span_context()
        # Without a parent the handoff starts its own trace: its state is keyed once the span exists.
        state = self._hop_state(ctx, parent.trace_id) if parent.is_valid else hf.HopState()
        hops = state.record_handoff(source, target)
        cycle = hf.find_cycle(state.path)
        handoff_id = handoff_id or uuid.uuid4().hex
        transfer = sc.TRANSFER_PASS_CONTROL if mode in hf.PASS_CONTROL_MODES else sc.TRANSFER_RETURN_TO_CALLER
        attrs: dict[str, Any] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_HANDOFF,
            sc.REACH_HANDOFF_SOURCE: source,
            sc.REACH_HANDOFF_TARGET: target,
            sc.REACH_HANDOFF_MODE: mode,
            sc.REACH_HANDOFF_ID: handoff_id,
            sc.REACH_HOP_COUNT: hops,
            sc.REACH_LOOP_DETECTED: cycle is not None,
            sc.GEN_AI_AGENT_NAME: source,
            sc.GEN_AI_TRANSFER_TARGET_NAME: target,
            sc.GEN_AI_TRANSFER_MODE: transfer,
            sc.GEN_AI_HANDOFF_FROM_AGENT: source,
            sc.GEN_AI_HANDOFF_TO_AGENT: target,
        }
        if reason:
            attrs[sc.REACH_HANDOFF_REASON] = reason
        if idempotency_key:
            attrs[sc.REACH_HANDOFF_IDEMPOTENCY_KEY] = idempotency_key
        session = current_session(ctx)
        _session_attributes(session, attrs)
        if task_id:
            attrs[sc.REACH_TASK_ID] = task_id
        if _shape.latest():
            attrs[sc.GEN_AI_TRANSFER_TARGET_TYPE] = sc.TRANSFER_TARGET_AGENT
            via = _transfer_tool(ctx, tool)
            if via is not None:
                _mark_transfer(via, source, target, transfer)
        span = self.tracer.start_span(
            sc.handoff_span_name(target), ctx, SpanKind.INTERNAL, attrs, start_time=start_time
        )
        if not parent.is_valid:
            new_state = self.hops.get(span.get_span_context().trace_id)
            new_state.merge_remote(state.hops, state.path)
        path = list(state.path)
        if cycle is not None:
            span.add_event(
                sc.EVENT_LOOP_DETECTED, {sc.REACH_LOOP_CYCLE: list(cycle), sc.REACH_HOP_PATH: path}
            )
        exceeded: HopLimitExceeded | None = None
        limit = self.settings.max_hops
        if hops > limit:
            exceeded = HopLimitExceeded(hops, limit, path)
            span.set_attribute(sc.REACH_HOP_LIMIT_EXCEEDED, True)
            span.add_event(
                sc.EVENT_HOP_LIMIT_EXCEEDED,
                {sc.REACH_HOP_COUNT: hops, sc.REACH_HOP_LIMIT: limit, sc.REACH_HOP_PATH: path},
            )
        inv = Handoff(
            self,
            span,
            trace.set_span_in_context(span, ctx),
            source=source,
            target=target,
            handoff_id=handoff_id,
            hop_count=hops,
            loop_detected=cycle is not None,
        )
        return inv, exceeded

    # -- HTTP ------------------------------------------------------------------------------------
    @safe
    def start_http(
        self, name: str, kind: SpanKind, attributes: dict[str, Any], ctx: otel_context.Context | None = None
    ) -> Invocation | None:
        """A plain CLIENT or SERVER span for an HTTP hop (outgoing call or incoming request)."""
        ctx = ctx if ctx is not None else otel_context.get_current()
        if ctx.get(_SUPPRESS_INSTRUMENTATION_KEY):
            return None
        span = self.tracer.start_span(name, ctx, kind, attributes)
        return Invocation(self, span, trace.set_span_in_context(span, ctx))

    @safe
    def record_raised_handoff(
        self, exc: BaseException, target: str, raised_in: Invocation | None = None
    ) -> None:
        """Record the takeover handoff a raised handoff signal means, once per exception object.

        ``raised_in`` is the span the signal was first raised in: a tool's is the tool that made it."""
        if getattr(exc, "_reach_otel_handoff", False):
            return
        with contextlib.suppress(Exception):
            exc._reach_otel_handoff = True  # type: ignore[attr-defined]
        tool = raised_in if isinstance(raised_in, ToolInvocation) else None
        inv = self.start_handoff(
            None, target, mode="takeover", reason=f"raised {type(exc).__name__}", tool=tool
        )
        if inv is not None:
            inv.stop()

    # -- gates -----------------------------------------------------------------------------------
    @safe
    def gate(self, name: str, *, limit: Any = None, observed: Any = None, reason: str | None = None) -> None:
        ctx = otel_context.get_current()
        agent = current_agent(ctx)
        span = agent.span if agent is not None else trace.get_current_span(ctx)
        attrs: dict[str, Any] = {sc.REACH_GATE_NAME: name}
        if limit is not None:
            attrs[sc.REACH_GATE_LIMIT] = limit
        if observed is not None:
            attrs[sc.REACH_GATE_OBSERVED] = observed
        if reason:
            attrs["reach.gate.reason"] = reason
        span.add_event(sc.EVENT_GATE_TRIGGERED, attrs)
        span.set_attribute(sc.REACH_GATE, name)

    # -- session ---------------------------------------------------------------------------------
    @contextmanager
    def session(
        self, session_id: str | None = None, user_id: str | None = None, task_id: str | None = None
    ) -> Iterator[SessionInfo]:
        info = SessionInfo(hf.clean_id(session_id), hf.clean_id(user_id), hf.clean_id(task_id))
        token = None
        try:
            token = otel_context.attach(_with_session(info, otel_context.get_current()))
        except Exception:  # telemetry must never raise into user code
            logger.debug("reach_otel: session attach failed", exc_info=True)
        try:
            yield info
        finally:
            if token is not None:
                otel_context.detach(token)


# -- the process-wide default handler: replaced by init(), swapped by tests -------------------------
_default_lock = threading.Lock()
_default: TelemetryHandler | None = None


def get_handler() -> TelemetryHandler:
    global _default
    handler = _default
    if handler is None:
        with _default_lock:
            if _default is None:
                _default = TelemetryHandler()
            handler = _default
    return handler


def set_handler(handler: TelemetryHandler | None) -> TelemetryHandler | None:
    """Install ``handler`` as the default (``None`` resets); returns the previous one."""
    global _default
    with _default_lock:
        previous, _default = _default, handler
    return previous

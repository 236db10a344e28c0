"""Maps one crew kickoff's CrewAI events onto §3 spans, in the thread that emits each event.

Kickoff → ``invoke_workflow {crew}``; a flow's kickoff → ``invoke_workflow {flow}``, with the crews
its methods kick off, and whatever else they do, nested under it: one flow run is one trace. An
agent executing a task → ``invoke_agent {role}``; a tool → ``execute_tool {tool}``, except
CrewAI's delegation tools, which are ``handoff {coworker}`` (delegate for *Delegate work to
coworker*, consult for *Ask question to coworker*) with the coworker's run nested under it; an LLM
call → ``chat {model}``, whatever provider CrewAI's LLM layer uses (the span is current while the
SDK call runs, so our OpenAI or Anthropic instrumentation stays out).

A span is made current in the emitting context when its start event arrives and taken off when its
end event arrives there, so whatever runs in between — the model call, the tool's body, the
coworker — nests under it. Every step runs under ``safe``: the crew never sees our failures; only
:class:`~reach_otel.HopLimitExceeded` propagates, when the app asked for it (``on_loop="raise"``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from crewai.events import (
    AgentExecutionCompletedEvent,
    AgentExecutionErrorEvent,
    AgentExecutionStartedEvent,
    LLMCallCompletedEvent,
    LLMCallFailedEvent,
    LLMCallStartedEvent,
    LLMStreamChunkEvent,
    ToolUsageErrorEvent,
    ToolUsageFinishedEvent,
    ToolUsageStartedEvent,
    stream_context,
)
from crewai.hooks.dispatch import InterceptionPoint, register, unregister
from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace

from reach_otel import handoff_state as hf
from reach_otel import semconv as sc
from reach_otel._safety import logger, safe
from reach_otel.errors import HopLimitExceeded
from reach_otel.handler import TelemetryHandler, current_agent, get_handler
from reach_otel.instrumentation.crewai import extract
from reach_otel.invocations import AgentInvocation, Handoff, Invocation, LLMInvocation, WorkflowInvocation

HandlerRef = Callable[[], TelemetryHandler]


@dataclass
class _Open:
    """A span of the kickoff, open between its start and end events."""

    inv: Invocation
    token: object  # the attach made in the emitting context at the start event
    name: str = ""
    coworker_failed: bool = False  # a handoff's: how the latest run of its coworker ended


@dataclass
class _Run:
    """One crew (or flow) kickoff: its workflow span, the spans open under it, and what to undo at
    its end."""

    handler: TelemetryHandler
    crew: Any  # the crew, or the flow, whose kickoff this is
    workflow: WorkflowInvocation | None
    open: dict[str, _Open] = field(default_factory=dict)  # set/pop are atomic: events come from threads
    undo: list[Callable[[], None]] = field(default_factory=list)
    finished: bool = False

    def start(self, key: str, inv: Invocation | None, name: str = "") -> None:
        if inv is not None:
            self.open[key] = _Open(inv, otel_context.attach(inv.ctx), name)

    def take(self, key: str) -> Invocation | None:
        entry = self.take_entry(key)
        return entry.inv if entry is not None else None

    def take_entry(self, key: str) -> _Open | None:
        entry = self.open.pop(key, None)
        if entry is not None:
            _detach_if_current(entry.inv.ctx, entry.token)
        return entry

    def take_tool(self, event: Any) -> _Open | None:
        """The tool or handoff an end event closes: by its start event's id, else the last of its name."""
        entry = self.take_entry(f"tool:{event.started_event_id}")
        if entry is None:
            keys = [k for k, e in self.open.items() if k.startswith("tool:") and e.name == event.tool_name]
            entry = self.take_entry(keys[-1]) if keys else None
        return entry

    def current_handoff(self) -> _Open | None:
        """The open handoff whose span is current here: a coworker runs inside the delegation tool."""
        span = otel_trace.get_current_span()
        for entry in list(self.open.values()):
            if isinstance(entry.inv, Handoff) and entry.inv.span is span:
                return entry
        return None

    def finish(self, error: BaseException | None) -> None:
        self.finished = True
        for key in reversed(list(self.open)):  # no end event came (the run was cut short)
            inv = self.take(key)
            if inv is not None and error is not None:
                inv.fail(error)
            elif inv is not None:
                inv.stop()
        for step in reversed(self.undo):
            with contextlib.suppress(ValueError, RuntimeError):  # a token made in another Context
                step()
        if self.workflow is not None and error is not None:
            self.workflow.fail(error)
        elif self.workflow is not None:
            self.workflow.stop()


#: The kickoff whose events the sink maps in this context (a nested kickoff shadows its caller's).
_current: ContextVar[_Run | None] = ContextVar("reach_otel_crewai_run", default=None)


def _detach_if_current(ctx: otel_context.Context, token: object) -> None:
    """Undo an attach only where it is on top, in the very Context it was made in.

    ``ContextVar.reset`` refuses a token made in another Context (ValueError): calling it directly,
    rather than ``context.detach``, keeps that expected case out of the error log.
    """
    if otel_context.get_current() is not ctx:
        return
    var = getattr(token, "var", None)
    if var is None:  # another runtime context implementation: only its own detach can do it
        otel_context.detach(token)  # type: ignore[arg-type]
        return
    with contextlib.suppress(ValueError, RuntimeError):
        var.reset(token)


def _sink(source: Any, event: Any) -> None:
    """CrewAI calls this synchronously, in the emitting thread, for every event of the kickoff."""
    try:
        run = _current.get()
        step = _STEPS.get(type(event))
        if run is not None and step is not None and not run.finished:
            step(run, source, event)
    except HopLimitExceeded:  # the app asked for it: on_loop="raise"
        raise
    except Exception:  # telemetry must never raise into the crew
        logger.debug("reach_otel: crewai event %s", type(event).__name__, exc_info=True)


def _sink_installed() -> bool:
    """Whether this context already passes events to us (a kickoff nested in another's tool does)."""
    sinks = getattr(stream_context, "_stream_sinks", None)
    return sinks is not None and _sink in sinks.get()


# -- agents ----------------------------------------------------------------------------------------------
def _agent_key(event: Any) -> str:
    return f"agent:{id(event.agent)}:{id(event.task)}"


@safe
def _agent_started(run: _Run, source: Any, event: Any) -> None:
    handoff = run.current_handoff()
    if handoff is not None and isinstance(handoff.inv, Handoff):
        handoff.coworker_failed = False  # CrewAI runs a failed coworker again: each run is a new try
        if handoff.inv.status == hf.CREATED:  # the coworker took the work on
            handoff.inv.transition("accept")
            handoff.inv.transition("start")
    name = extract.agent_name(event.agent)
    agent_id = getattr(event.agent, "id", None)
    inv = run.handler.start_agent(name, role=name, agent_id=str(agent_id) if agent_id else None)
    if inv is not None and inv.capture and inv.span.is_recording():
        inv._content(sc.GEN_AI_INPUT_MESSAGES, [{"role": "user", "parts": [_text(event.task_prompt)]}])
    run.start(_agent_key(event), inv)


@safe
def _agent_completed(run: _Run, source: Any, event: Any) -> None:
    inv = run.take(_agent_key(event))
    if isinstance(inv, AgentInvocation):
        inv.stop(event.output if isinstance(event.output, str) else None)


@safe
def _agent_failed(run: _Run, source: Any, event: Any) -> None:
    inv = run.take(_agent_key(event))
    if inv is not None:
        inv.fail(*extract.reported_error(event.error))
    handoff = run.current_handoff()  # unless CrewAI's next try succeeds, the handoff failed
    if handoff is not None:
        handoff.coworker_failed = True


# -- tools and delegation ----------------------------------------------------------------------------------
def _tool_started(run: _Run, source: Any, event: Any) -> None:
    delegation = _delegation(run, event)
    inv: Invocation | None
    if delegation is not None:
        source_agent, target, mode = delegation
        # Outside safe: HopLimitExceeded comes from here when the app asked for it (on_loop="raise").
        inv = run.handler.start_handoff(source_agent, target, mode=mode, reason=str(event.tool_name))
    else:
        inv = _start_tool(run, event)
    _opened(run, event, inv)


@safe
def _delegation(run: _Run, event: Any) -> tuple[str, str, str] | None:
    """(source, target, mode) when the tool is one of CrewAI's delegation tools."""
    mode = extract.delegation_mode(event.tool_name, event.tool_class)
    if mode is None:
        return None
    agent = current_agent()
    source = agent.name if agent is not None else str(event.agent_role or "unknown")
    target = extract.coworker(extract.tool_arguments(event.tool_args), extract.crew_roles(run.crew))
    return source, target or "unknown", mode


@safe
def _start_tool(run: _Run, event: Any) -> Invocation | None:
    inv = run.handler.start_tool(str(event.tool_name))
    if inv is not None:
        inv.set_arguments(extract.tool_arguments(event.tool_args))
    return inv


@safe
def _opened(run: _Run, event: Any, inv: Invocation | None) -> None:
    run.start(f"tool:{event.event_id}", inv, event.tool_name)


@safe
def _tool_finished(run: _Run, source: Any, event: Any) -> None:
    entry = run.take_tool(event)
    inv = entry.inv if entry is not None else None
    failure = getattr(event, "failure", None)
    if entry is not None and isinstance(inv, Handoff):
        if inv.status == hf.RUNNING:
            inv.transition("fail" if entry.coworker_failed else "commit")
        elif inv.status == hf.CREATED:  # no coworker took it on: CrewAI found none by that name
            inv.transition("reject")
        inv.stop()  # CrewAI gives the tool's caller an error text, not an exception, either way
    elif inv is not None and failure is not None:  # the tool ran and said it did not succeed
        message = str(getattr(failure, "message", "") or "tool failure")
        inv.fail(extract.CrewAIError(message[:1024]), extract.failure_type(failure))
    elif inv is not None:
        inv.stop(event.output)


@safe
def _tool_failed(run: _Run, source: Any, event: Any) -> None:
    entry = run.take_tool(event)
    inv = entry.inv if entry is not None else None
    if isinstance(inv, Handoff) and inv.status == hf.RUNNING:
        inv.transition("fail")
    if inv is not None:
        inv.fail(*extract.reported_error(event.error))


# -- LLM calls ------------------------------------------------------------------------------------------
@safe
def _llm_started(run: _Run, source: Any, event: Any) -> None:
    address, port = extract.server_of(source)
    inv = run.handler.start_llm(
        event.model,
        extract.provider_of(source),
        stream=event.stream if isinstance(event.stream, bool) else None,
        server_address=address,
        server_port=port,
        request_attributes=dict(extract.request_attributes(event)),
        unless_nested=True,
    )
    if inv is not None:
        inv.set_request_messages(event.messages)
    run.start(f"llm:{event.call_id}", inv)


@safe
def _llm_chunk(run: _Run, source: Any, event: Any) -> None:
    entry = run.open.get(f"llm:{event.call_id}")
    if entry is not None and isinstance(entry.inv, LLMInvocation):
        entry.inv.mark_first_chunk()


@safe
def _llm_completed(run: _Run, source: Any, event: Any) -> None:
    inv = run.take(f"llm:{event.call_id}")
    if not isinstance(inv, LLMInvocation):
        return
    inv.record_usage(*extract.usage_tokens(event.usage))
    attrs = dict(extract.response_attributes(event))
    if attrs and inv.span.is_recording():
        inv.span.set_attributes(attrs)
    inv.stop(event.response if isinstance(event.response, str) else None)


@safe
def _llm_failed(run: _Run, source: Any, event: Any) -> None:
    inv = run.take(f"llm:{event.call_id}")
    if inv is not None:
        inv.fail(*extract.reported_error(event.error))


def _text(value: Any) -> dict[str, Any]:
    return {"type": "text", "content": value if isinstance(value, str) else str(value)}


_STEPS: dict[type, Callable[[_Run, Any, Any], None]] = {
    AgentExecutionStartedEvent: _agent_started,
    AgentExecutionCompletedEvent: _agent_completed,
    AgentExecutionErrorEvent: _agent_failed,
    ToolUsageStartedEvent: _tool_started,
    ToolUsageFinishedEvent: _tool_finished,
    ToolUsageErrorEvent: _tool_failed,
    LLMCallStartedEvent: _llm_started,
    LLMStreamChunkEvent: _llm_chunk,
    LLMCallCompletedEvent: _llm_completed,
    LLMCallFailedEvent: _llm_failed,
}


class CrewListener:
    """The two interception hooks that open and close a kickoff's mapping."""

    def __init__(self, handler: HandlerRef = get_handler) -> None:
        self._handler = handler
        self.registered = False

    def register(self) -> None:
        if not self.registered:
            register(InterceptionPoint.EXECUTION_START, self.on_execution_start)
            register(InterceptionPoint.EXECUTION_END, self.on_execution_end)
            self.registered = True

    def unregister(self) -> None:
        """No new kickoff is mapped; one already running still ends its spans."""
        unregister(InterceptionPoint.EXECUTION_START, self.on_execution_start)
        unregister(InterceptionPoint.EXECUTION_END, self.on_execution_end)
        self.registered = False

    # A hook's return value, when not None, replaces the kickoff's inputs or output: these return None.
    @safe
    def on_execution_start(self, ctx: Any) -> None:
        kickoff = extract.kickoff_of(ctx)
        if kickoff is None:
            return
        owner, name = kickoff
        handler = self._handler()
        workflow = handler.start_workflow(name)
        run = _Run(handler, owner, workflow)
        token = _current.set(run)
        run.undo.append(lambda: _current.reset(token))
        if workflow is not None:
            attached = otel_context.attach(workflow.ctx)
            run.undo.append(lambda: _detach_if_current(workflow.ctx, attached))
        if not _sink_installed():
            sinks = stream_context.add_stream_sink(_sink)
            run.undo.append(lambda: stream_context.reset_stream_sinks(sinks))

    @safe
    def on_execution_end(self, ctx: Any) -> None:
        run = _current.get()
        kickoff = extract.kickoff_of(ctx)
        if run is None or run.finished or kickoff is None or run.crew is not kickoff[0]:
            return
        if getattr(ctx, "status", None) != "failed":
            run.finish(None)
            return
        error = getattr(ctx, "error", None)
        run.finish(error if isinstance(error, BaseException) else extract.CrewAIError("crew kickoff failed"))

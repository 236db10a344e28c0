"""One object per live span: it owns activation (context attach/detach) and an idempotent end.

``stop(result)`` ends a call that returned, ``fail(exc)`` one that raised; both are safe to call
more than once and never raise. The :class:`~reach_otel.handler.TelemetryHandler` creates them.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry.trace import Span, Status, StatusCode

from reach_otel import handoff_state as hf
from reach_otel import semconv as sc
from reach_otel._safety import safe
from reach_otel.errors import error_type, handoff_target
from reach_otel.extractors import (
    llm_response_attributes,
    message_argument,
    output_messages,
    system_instructions,
    to_messages,
)

if TYPE_CHECKING:
    from reach_otel.handler import TelemetryHandler

Token = object

# Counter updates are rare and tiny: one lock for every agent is cheaper than one lock each.
_COUNTERS_LOCK = threading.Lock()


class Invocation:
    """A started span plus the context that makes it current."""

    __slots__ = ("_ended", "ctx", "handler", "span")

    def __init__(self, handler: TelemetryHandler, span: Span, ctx: otel_context.Context) -> None:
        self.handler = handler
        self.span = span
        self.ctx = ctx
        self._ended = False

    # -- activation --------------------------------------------------------------------------------
    @safe
    def enter(self) -> Token:
        return otel_context.attach(self.ctx)

    @safe
    def exit(self, token: Token | None) -> None:
        if token is not None:
            otel_context.detach(token)  # type: ignore[arg-type]

    # -- ending ------------------------------------------------------------------------------------
    @safe
    def stop(self, result: Any = None) -> None:
        if self._ended:
            return
        self._ended = True
        try:
            if self.span.is_recording():
                self._record_result(result)
        finally:  # whatever failed above, the span still ends
            self._finish(errored=False)

    @safe
    def fail(self, exc: BaseException, error_code: str | None = None) -> None:
        if self._ended:
            return
        target = handoff_target(exc)
        if target is not None:  # a declared handoff signal: control flow, not a failure
            self.handler.record_raised_handoff(exc, target, self)
            self.stop()
            return
        self._ended = True
        span = self.span
        try:
            if span.is_recording():
                span.set_status(Status(StatusCode.ERROR, f"{exc}"[:1024]))
                span.set_attribute(sc.ERROR_TYPE, error_code or error_type(exc))
                span.record_exception(exc)
        finally:
            self._finish(errored=True)

    def _finish(self, *, errored: bool) -> None:
        try:
            self._before_end(errored=errored)
        finally:
            self.span.end()

    # -- per-kind extension points ---------------------------------------------------------------
    def _record_result(self, result: Any) -> None:
        """Attributes taken from a successful call's result."""

    def _before_end(self, *, errored: bool) -> None:
        """Attributes known only at the end (sums, final states)."""

    @property
    def capture(self) -> bool:
        return self.handler.settings.capture_content

    def _content(self, key: str, value: Any) -> None:
        if value is not None:
            self.span.set_attribute(key, self.handler.content_json(value))


class WorkflowInvocation(Invocation):
    __slots__ = ("is_root", "trace_id")

    def __init__(
        self, handler: TelemetryHandler, span: Span, ctx: otel_context.Context, is_root: bool
    ) -> None:
        super().__init__(handler, span, ctx)
        self.is_root = is_root
        self.trace_id = span.get_span_context().trace_id

    def _before_end(self, *, errored: bool) -> None:
        if self.is_root:  # the request is over: its hop state can go
            self.handler.hops.discard(self.trace_id)


class AgentInvocation(WorkflowInvocation):
    """An agent run: it sums the tokens and counts the calls made while it is the nearest agent."""

    __slots__ = ("input_tokens", "llm_calls", "name", "output_tokens", "tool_calls")

    def __init__(
        self, handler: TelemetryHandler, span: Span, ctx: otel_context.Context, is_root: bool, name: str
    ) -> None:
        super().__init__(handler, span, ctx, is_root)
        self.name = name
        self.input_tokens = 0
        self.output_tokens = 0
        self.llm_calls = 0
        self.tool_calls = 0

    def add_llm_call(self, input_tokens: int | None, output_tokens: int | None) -> None:
        with _COUNTERS_LOCK:
            self.llm_calls += 1
            self.input_tokens += input_tokens or 0
            self.output_tokens += output_tokens or 0

    def add_tool_call(self) -> None:
        with _COUNTERS_LOCK:
            self.tool_calls += 1

    def set_input(self, bound_arguments: dict[str, Any]) -> None:
        if self.capture and self.span.is_recording():
            self._content(sc.GEN_AI_INPUT_MESSAGES, to_messages(message_argument(bound_arguments), "user"))

    def _record_result(self, result: Any) -> None:
        if self.capture:
            self._content(sc.GEN_AI_OUTPUT_MESSAGES, to_messages(result, "assistant"))

    def _before_end(self, *, errored: bool) -> None:
        with _COUNTERS_LOCK:
            self.span.set_attributes(
                {
                    sc.GEN_AI_USAGE_INPUT_TOKENS: self.input_tokens,
                    sc.GEN_AI_USAGE_OUTPUT_TOKENS: self.output_tokens,
                    sc.REACH_AGENT_LLM_CALLS: self.llm_calls,
                    sc.REACH_AGENT_TOOL_CALLS: self.tool_calls,
                }
            )
        super()._before_end(errored=errored)


class LLMInvocation(Invocation):
    """An LLM call; its usage is added to the enclosing agent when it ends."""

    __slots__ = ("_first_chunk_at", "_started_at", "agent", "input_tokens", "output_tokens")

    def __init__(
        self, handler: TelemetryHandler, span: Span, ctx: otel_context.Context, agent: AgentInvocation | None
    ) -> None:
        super().__init__(handler, span, ctx)
        self.agent = agent
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self._started_at = time.monotonic()
        self._first_chunk_at: float | None = None

    @safe
    def set_request_messages(self, messages: Any, system: Any = None, tools: Any = None) -> None:
        """The request's content (opt-in): its messages, its separate system prompt and the
        definitions of the tools it offers the model."""
        if self.capture and self.span.is_recording():
            self._content(sc.GEN_AI_INPUT_MESSAGES, to_messages(messages, "user"))
            self._content(sc.GEN_AI_SYSTEM_INSTRUCTIONS, system_instructions(system))
            self._content(sc.GEN_AI_TOOL_DEFINITIONS, tools or None)

    @safe
    def record_usage(self, input_tokens: int | None = None, output_tokens: int | None = None) -> None:
        if input_tokens is not None:
            self.input_tokens = int(input_tokens)
            self.span.set_attribute(sc.GEN_AI_USAGE_INPUT_TOKENS, self.input_tokens)
        if output_tokens is not None:
            self.output_tokens = int(output_tokens)
            self.span.set_attribute(sc.GEN_AI_USAGE_OUTPUT_TOKENS, self.output_tokens)

    @safe
    def set_response(self, result: Any) -> None:
        """Take response model, id, finish reasons and usage from a result or a stream chunk."""
        attrs = dict(llm_response_attributes(result))
        inp = attrs.pop(sc.GEN_AI_USAGE_INPUT_TOKENS, None)
        out = attrs.pop(sc.GEN_AI_USAGE_OUTPUT_TOKENS, None)
        if attrs:
            self.span.set_attributes(attrs)
        if inp is not None or out is not None:
            self.record_usage(inp, out)

    def mark_first_chunk(self) -> None:
        if self._first_chunk_at is None:
            self._first_chunk_at = time.monotonic()
            self.span.set_attribute(
                sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, self._first_chunk_at - self._started_at
            )

    @safe
    def on_chunk(self, chunk: Any) -> None:
        self.mark_first_chunk()
        self.set_response(chunk)

    def _record_result(self, result: Any) -> None:
        self.set_response(result)
        if self.capture:
            self._content(sc.GEN_AI_OUTPUT_MESSAGES, output_messages(result))

    def _before_end(self, *, errored: bool) -> None:
        if self.agent is not None:
            self.agent.add_llm_call(self.input_tokens, self.output_tokens)


class ToolInvocation(Invocation):
    __slots__ = ("agent",)

    def __init__(
        self, handler: TelemetryHandler, span: Span, ctx: otel_context.Context, agent: AgentInvocation | None
    ) -> None:
        super().__init__(handler, span, ctx)
        self.agent = agent

    @safe
    def set_arguments(self, arguments: Any) -> None:
        if self.capture and self.span.is_recording():
            self._content(sc.GEN_AI_TOOL_CALL_ARGUMENTS, arguments)

    def _record_result(self, result: Any) -> None:
        if self.capture:
            self._content(sc.GEN_AI_TOOL_CALL_RESULT, result)

    def _before_end(self, *, errored: bool) -> None:
        if self.agent is not None:
            self.agent.add_tool_call()


class Handoff(Invocation):
    """A handoff between two agents, with the aa-handoff/v1 state machine (``transition``)."""

    __slots__ = ("_state", "_token", "_transitions", "hop_count", "id", "loop_detected", "source", "target")

    def __init__(
        self,
        handler: TelemetryHandler,
        span: Span,
        ctx: otel_context.Context,
        *,
        source: str,
        target: str,
        handoff_id: str,
        hop_count: int,
        loop_detected: bool,
    ) -> None:
        super().__init__(handler, span, ctx)
        self.source = source
        self.target = target
        self.id = handoff_id
        self.hop_count = hop_count
        self.loop_detected = loop_detected
        self._state = hf.CREATED
        self._transitions = 0
        self._token: Token | None = None

    @property
    def status(self) -> str:
        return self._state

    @safe
    def transition(self, event: str) -> str:
        """Apply a declared transition (accept, start, commit, fail, reject, timeout).

        An undeclared one is recorded as ``reach.handoff.illegal_transition`` and moves to failed.
        Returns the new state.
        """
        before = self._state
        after = hf.next_state(before, event)
        self._transitions += 1
        attrs = {sc.REACH_HANDOFF_EVENT: str(event), sc.REACH_HANDOFF_FROM_STATUS: before}
        if after is None:
            self.span.add_event(sc.EVENT_ILLEGAL_TRANSITION, attrs)
            after = hf.FAILED
        else:
            self.span.add_event(sc.EVENT_HANDOFF_TRANSITION, {**attrs, sc.REACH_HANDOFF_STATUS: after})
        self._state = after
        return after

    def _before_end(self, *, errored: bool) -> None:
        self._state = hf.final_status(self._state, errored=errored)
        self.span.set_attributes(
            {sc.REACH_HANDOFF_STATUS: self._state, sc.REACH_HANDOFF_TRANSITIONS: self._transitions}
        )

    # -- context manager: the handoff span is current inside the block -----------------------------
    def __enter__(self) -> Handoff:
        self._token = self.enter()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        self.exit(self._token)
        self._token = None
        if exc is not None:
            self.fail(exc)
        else:
            self.stop()

"""One A2A request in flight, client or server: its span, the handoff it is (client), and its end.

Answers and stream events update the span (task id, state, conversation) and move the handoff's
aa-handoff/v1 state as the task's state moves (:mod:`.states`). A task that ends ``failed`` makes
the request's span an error (``error.type=task_failed``); rejected and canceled are outcomes, not
errors. A timeout (or a caller's cancellation) leaves the handoff ``unknown``; any other exception
fails it. Every step runs under ``safe``: the caller's result and exception are never touched.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.trace import Span, Status, StatusCode

from reach_otel import handoff_state as hf
from reach_otel import semconv as sc
from reach_otel._safety import safe
from reach_otel.errors import error_type
from reach_otel.instrumentation.a2a import extract, states
from reach_otel.invocations import Handoff, Invocation

_CALL_KEY = otel_context.create_key("reach_otel.a2a.call")


class Call:
    """A live A2A request: ``span`` is ours (``inv``) or a server span we took over (``inv`` is None)."""

    __slots__ = ("_done", "ctx", "handoff", "inv", "method", "span", "state")

    def __init__(self, span: Span, ctx: otel_context.Context, method: str, inv: Invocation | None) -> None:
        self.span = span
        self.inv = inv
        self.method = method
        self.ctx = otel_context.set_value(_CALL_KEY, self, ctx)
        self.handoff: Handoff | None = None
        self.state: str | None = None
        self._done = False

    # -- activation: the call's context is current only while the SDK's code for it runs --------
    @safe
    def enter(self, ctx: otel_context.Context | None = None) -> object:
        return otel_context.attach(ctx if ctx is not None else self.ctx)

    @safe
    def exit(self, token: object | None) -> None:
        if token is not None:
            otel_context.detach(token)  # type: ignore[arg-type]

    # -- what the agent answered -----------------------------------------------------------------
    @safe
    def observe(self, answer: Any) -> bool:
        """Take in an answer or stream event; True when it is final (a reply, or a terminal task state)."""
        found = extract.facts(answer)
        if self.span.is_recording():
            self.span.set_attributes(dict(extract.result_attributes(found)))
        if self.handoff is not None and found.task_id:
            self.handoff.span.set_attribute(sc.REACH_TASK_ID, found.task_id)
        state = states.REPLIED if found.is_message else found.state
        if state is None:
            return False
        self.state = state
        self._move_handoff(state, final=False)
        return found.is_message or states.HANDOFF_STATE.get(state) in hf.TERMINAL

    def _move_handoff(self, task_state: str, *, final: bool = True) -> None:
        if self.handoff is not None:
            for event in states.events_towards(self.handoff.status, task_state, final=final):
                self.handoff.transition(event)

    # -- the end ---------------------------------------------------------------------------------
    @safe
    def finish(self, result: Any = None) -> None:
        """End a request that was answered (``result`` is its answer, None for a stream)."""
        if self._done:
            return
        self._done = True
        try:
            if result is not None:
                self.observe(result)
            if self.state is not None:
                self._move_handoff(self.state)  # the last state is final now (a submitted task: accepted)
            if self.state == "failed":
                self.span.set_attribute(sc.ERROR_TYPE, sc.A2A_TASK_FAILED)
                self.span.set_status(Status(StatusCode.ERROR, "task failed"))
        finally:
            self._end(None)

    @safe
    def fail(self, exc: BaseException) -> None:
        """End a request that raised: a timeout or cancellation leaves the handoff unknown."""
        if self._done:
            return
        self._done = True
        if isinstance(exc, GeneratorExit):  # the caller closed the stream early: not an error
            self._end(None)
            return
        unfinished = _is_timeout(exc)
        try:
            if unfinished and self.handoff is not None:
                self._move_handoff("unknown")
                _mark_error(self.handoff.span, exc)
        finally:
            self._end(exc, handoff_failed=not unfinished)

    def _end(self, exc: BaseException | None, *, handoff_failed: bool = True) -> None:
        try:
            if self.inv is not None:
                if exc is None:
                    self.inv.stop()
                else:
                    self.inv.fail(exc)
            elif exc is not None:
                _mark_error(self.span, exc)
        finally:
            if self.handoff is not None:
                if exc is None or not handoff_failed:
                    self.handoff.stop()
                else:
                    self.handoff.fail(exc)


def _is_timeout(exc: BaseException) -> bool:
    if isinstance(exc, (TimeoutError, asyncio.CancelledError)):
        return True
    try:
        from a2a.client.errors import A2AClientTimeoutError
    except ImportError:  # pragma: no cover - the SDK is what is instrumented
        return False
    return isinstance(exc, A2AClientTimeoutError)


def _mark_error(span: Span, exc: BaseException) -> None:
    if span.is_recording():
        span.set_status(Status(StatusCode.ERROR, f"{exc}"[:1024]))
        span.set_attribute(sc.ERROR_TYPE, error_type(exc))
        span.record_exception(exc)


def current_call(ctx: otel_context.Context | None = None) -> Call | None:
    value = (ctx if ctx is not None else otel_context.get_current()).get(_CALL_KEY)
    return value if isinstance(value, Call) else None


async def run(call: Call, original: Callable[..., Any], args: Any, kwargs: Any, ctx: Any) -> Any:
    """Await one request under ``ctx`` and end ``call`` with its answer or exception."""
    token = call.enter(ctx)
    try:
        result = await original(*args, **kwargs)
    except BaseException as exc:
        call.exit(token)
        call.fail(exc)
        raise
    call.exit(token)
    call.finish(result)
    return result


async def stream(call: Call, events: AsyncIterator[Any], ctx: Any) -> AsyncIterator[Any]:
    """Pass a stream's events through, each step under ``ctx``; ``call`` ends at the final event,
    when the stream is exhausted or closed, or with its error — exactly once."""
    try:
        while True:
            token = call.enter(ctx)
            try:
                event = await events.__anext__()
            except StopAsyncIteration:
                break
            finally:
                call.exit(token)
            if call.observe(event):
                call.finish()
            yield event
    except BaseException as exc:
        call.fail(exc)
        raise
    finally:
        call.finish()
        close = getattr(events, "aclose", None)
        if close is not None:
            token = call.enter(ctx)
            try:
                await close()
            finally:
                call.exit(token)

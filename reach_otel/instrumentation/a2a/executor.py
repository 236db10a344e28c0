"""The server's agent work: an ``invoke_agent {agent}`` span around ``AgentExecutor.execute``.

The agent's name is its AgentCard's ``name``. The request handler's constructor is where the SDK
meets both, so it is wrapped: the executor it is given becomes a transparent proxy whose
``execute`` runs inside the agent span, which carries the hop count the caller's baggage brought
(and a conversation: the caller's session, else the task's contextId, which then becomes the
session for the LLM and tool calls below and the agents this one calls). The proxy also watches the
events the agent publishes, so the span ends with the task's id and state — failed is an error.
A handler built before ``instrument()`` keeps its plain executor; after ``uninstrument()`` a proxy
is a plain pass-through.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Callable
from typing import Any

import wrapt
from opentelemetry.trace import Status, StatusCode

from reach_otel import semconv as sc
from reach_otel._safety import safe
from reach_otel.handler import current_session
from reach_otel.instrumentation._base import HandlerRef
from reach_otel.instrumentation.a2a import extract
from reach_otel.invocations import AgentInvocation

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]

_active = False


def set_active(active: bool) -> None:
    global _active
    _active = active


class Run:
    """One agent run: its span and the last task state the agent published."""

    __slots__ = ("inv", "state")

    def __init__(self, inv: AgentInvocation) -> None:
        self.inv = inv
        self.state: str | None = None

    @safe
    def observe(self, event: Any) -> None:
        found = extract.facts(event)
        if found.task_id:
            self.inv.span.set_attribute(sc.A2A_TASK_ID, found.task_id)
        if found.state:
            self.state = found.state
            self.inv.span.set_attribute(sc.A2A_TASK_STATE, found.state)

    @safe
    def finish(self) -> None:
        if self.state == "failed":
            self.inv.span.set_attribute(sc.ERROR_TYPE, sc.A2A_TASK_FAILED)
            self.inv.span.set_status(Status(StatusCode.ERROR, "task failed"))
        self.inv.stop()

    @safe
    def fail(self, exc: BaseException) -> None:
        if isinstance(exc, asyncio.CancelledError):  # the task was canceled: an outcome, not a fault
            self.inv.span.set_attribute(sc.A2A_TASK_STATE, "canceled")
            self.inv.stop()
            return
        self.inv.fail(exc)


@safe
def _start(
    ref: HandlerRef, card: Any, executor: Any, context: Any, stack: contextlib.ExitStack
) -> Run | None:
    handler = ref()
    context_id = getattr(context, "context_id", None)
    if current_session() is None and isinstance(context_id, str) and context_id:
        stack.enter_context(handler.session(session_id=context_id))
    name = extract.card_name(card) or type(executor).__name__
    description = getattr(card, "description", None) or None
    inv = handler.start_agent(name, agent_id=name, description=description)
    if inv is None:
        return None
    task_id = getattr(context, "task_id", None)
    if isinstance(task_id, str) and task_id:
        inv.span.set_attribute(sc.A2A_TASK_ID, task_id)
    return Run(inv)


class _ObservedQueue(wrapt.ObjectProxy):  # type: ignore[type-arg]
    """The agent's event queue, telling the run each event the agent publishes."""

    def __init__(self, queue: Any, run: Run) -> None:
        super().__init__(queue)
        self._self_run = run

    async def enqueue_event(self, event: Any, *args: Any, **kwargs: Any) -> Any:
        self._self_run.observe(event)
        return await self.__wrapped__.enqueue_event(event, *args, **kwargs)


class TracedExecutor(wrapt.ObjectProxy):  # type: ignore[type-arg]
    """An ``AgentExecutor`` whose ``execute`` is an agent span (everything else passes through)."""

    def __init__(self, executor: Any, ref: HandlerRef, card: Any) -> None:
        super().__init__(executor)
        self._self_ref = ref
        self._self_card = card

    async def execute(self, context: Any, event_queue: Any) -> Any:
        if not _active:
            return await self.__wrapped__.execute(context, event_queue)
        with contextlib.ExitStack() as stack:
            run = _start(self._self_ref, self._self_card, self.__wrapped__, context, stack)
            if run is None:
                return await self.__wrapped__.execute(context, event_queue)
            token = run.inv.enter()
            try:
                result = await self.__wrapped__.execute(context, _ObservedQueue(event_queue, run))
            except BaseException as exc:
                run.inv.exit(token)
                run.fail(exc)
                raise
            run.inv.exit(token)
            run.finish()
            return result


@safe
def _traced_arguments(
    ref: HandlerRef, wrapped: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    bound = inspect.signature(wrapped).bind(*args, **kwargs)
    executor = bound.arguments.get("agent_executor")
    if executor is None or isinstance(executor, TracedExecutor):
        return None
    bound.arguments["agent_executor"] = TracedExecutor(executor, ref, bound.arguments.get("agent_card"))
    return bound.args, bound.kwargs


def init_wrapper(ref: HandlerRef) -> Wrapper:
    """A request handler's ``__init__(agent_executor, task_store, agent_card, ...)``: the executor traced."""

    def init(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        traced = _traced_arguments(ref, wrapped, args, kwargs)
        if traced is None:
            return wrapped(*args, **kwargs)
        return wrapped(*traced[0], **traced[1])

    return init

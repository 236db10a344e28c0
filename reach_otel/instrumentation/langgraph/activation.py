"""Where a LangGraph run's span may be made current (attached) without outliving the run.

- A node's own function runs with its node's span — or the span the node runs under — current
  from its first line (:mod:`.bodies`): attached when LangGraph enters the function, in the
  Context LangGraph runs it in, and detached when it returns. A node that is no function (a
  RunnableLambda, a generator) gets it where its runnable's start is reported, which is in that
  Context too (under an async manager, in the node's own task).
- Under a sync callback manager a run's start and end callbacks come in one Context, so each
  node, model and tool run's span is current from its start to its end.
- An async manager ends chain and model runs in a shielded copy of the Context, where nothing
  attached at their start can be undone: there a span is attached only in a task other than the
  one the caller awaits the graph in — LangGraph's task for a node, the one it runs a node's
  function in — whose Context is the run's own and ends with it. Tool runs end where they
  started, as under a sync manager.
- When a node turns out to be an agent, its span is made current there too, for the rest of it.
- A graph root is never attached: the caller's Context is left as it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context

if TYPE_CHECKING:
    from reach_otel.instrumentation.langgraph.runs import Run

_CO_COROUTINE = 0x80  # inspect.CO_COROUTINE


def async_dispatch(depth: int = 1) -> bool:
    """True when an async callback manager called us (its dispatcher is a coroutine), whose end
    callbacks then run in a copy of the Context; a sync manager calls start and end in one.

    ``depth``: how many of our own frames lie between the event method and this call."""
    frame: Any = sys._getframe(depth + 2)  # skip this, our frames and the event method's _guarded
    for _ in range(3):
        if frame is None:
            return False
        if frame.f_code.co_flags & _CO_COROUTINE:
            return True
        frame = frame.f_back
    return False


def current_task() -> object | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no event loop running in this thread
        return None


def may_attach(run: Run, asynchronous: bool) -> bool:
    """Whether ``run``'s span may be made current here: always under a sync manager; under an async
    one only in a task other than the caller's, whose Context is the run's own and ends with it."""
    if not asynchronous:
        return True
    task = current_task()
    return task is not None and task is not run.root().task


def in_context(ctx: otel_context.Context, start: Callable[[], Any]) -> Any:
    token = otel_context.attach(ctx)
    try:
        return start()
    finally:
        otel_context.detach(token)


def enter(ctx: otel_context.Context | None) -> object | None:
    """Make ``ctx`` current unless it already is; the token for :func:`reset`, or None."""
    if ctx is None or otel_context.get_current() is ctx:
        return None
    return otel_context.attach(ctx)


def reset(token: object | None) -> None:
    """Undo an attach, quietly when it was made in another Context (which it then leaves alone)."""
    if token is None:
        return
    var = getattr(token, "var", None)
    if var is None:  # another runtime context implementation: only its own detach can do it
        otel_context.detach(token)  # type: ignore[arg-type]
        return
    with contextlib.suppress(ValueError, RuntimeError):  # made in another Context
        var.reset(token)

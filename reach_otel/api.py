"""The functional half of the public API: handoff, session, gate and record_usage.

These look up the default handler at call time, so they work before or without ``init()``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from reach_otel import handoff_state as hf
from reach_otel.handler import SessionInfo, current_llm, get_handler
from reach_otel.invocations import Handoff


class _NoopHandoff:
    """Stands in when telemetry is suppressed or failed: the state machine still answers."""

    def __init__(self, source: str | None, target: str) -> None:
        self.source = source or "unknown"
        self.target = target
        self.id = ""
        self.hop_count = 0
        self.loop_detected = False
        self._state = hf.CREATED

    @property
    def status(self) -> str:
        return self._state

    def transition(self, event: str) -> str:
        self._state = hf.next_state(self._state, event) or hf.FAILED
        return self._state

    def __enter__(self) -> _NoopHandoff:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


def handoff(
    source: str | None,
    target: str,
    *,
    reason: str | None = None,
    mode: str = "delegate",
    task_id: str | None = None,
    handoff_id: str | None = None,
    idempotency_key: str | None = None,
) -> Handoff | _NoopHandoff:
    """A handoff from ``source`` to ``target`` (a context manager; ``transition()`` drives its states).

    ``mode`` is one of delegate, consult, takeover, escalate. ``source=None`` means the current agent.
    """
    inv = get_handler().start_handoff(
        source,
        target,
        reason=reason,
        mode=mode,
        task_id=task_id,
        handoff_id=handoff_id,
        idempotency_key=idempotency_key,
    )
    return inv if inv is not None else _NoopHandoff(source, target)


@contextmanager
def session(
    session_id: str | None = None, user_id: str | None = None, task_id: str | None = None
) -> Iterator[SessionInfo]:
    """Spans started inside carry the session (``gen_ai.conversation.id``), user and task ids.

    The ids (printable text, at most 256 characters each) also travel in W3C baggage, so the spans
    of a remote agent this session calls over HTTP carry them too.
    """
    with get_handler().session(session_id, user_id, task_id) as info:
        yield info


def gate(name: str, *, limit: Any = None, observed: Any = None, reason: str | None = None) -> None:
    """Report that an agent gate (max steps, token budget, timeout, ...) was hit: an event, not a crash."""
    get_handler().gate(name, limit=limit, observed=observed, reason=reason)


def record_usage(input_tokens: int | None = None, output_tokens: int | None = None) -> None:
    """Set token usage on the current LLM span (inside an ``@llm`` function)."""
    inv = current_llm()
    if inv is not None:
        inv.record_usage(input_tokens, output_tokens)

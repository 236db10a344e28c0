"""How an A2A task's state moves the aa-handoff/v1 state machine of the handoff that sent the message.

submitted → accepted, working → running, completed → committed, failed → failed, rejected →
rejected, canceled → failed, unknown (and a timeout) → unknown. A task state seen out of order
walks the declared transitions only (completed right after the send: accept, start, commit).
input-required and auth-required keep the handoff running: the target waits for the caller, so a
handoff ended there is unknown, with the task state on the span saying why. ``submitted`` is taken
when the next state arrives or the request ends (``final``): a task rejected right after it was
submitted is then rejected, which the machine could not say from accepted.
"""

from __future__ import annotations

from collections import deque
from typing import Final

from reach_otel import handoff_state as hf

#: A2A task state → the handoff state it means.
HANDOFF_STATE: Final[dict[str, str]] = {
    "submitted": hf.ACCEPTED,
    "working": hf.RUNNING,
    "input-required": hf.RUNNING,
    "auth-required": hf.RUNNING,
    "completed": hf.COMMITTED,
    "failed": hf.FAILED,
    "rejected": hf.REJECTED,
    "canceled": hf.FAILED,
    "unknown": hf.UNKNOWN,
}
#: A direct reply (a Message, no task) means the target did the work: committed.
REPLIED: Final = "completed"


def _shortest(current: str, target: str) -> tuple[str, ...] | None:
    """The fewest declared events from ``current`` to ``target`` (breadth first), or None."""
    seen = {current}
    queue: deque[tuple[str, tuple[str, ...]]] = deque([(current, ())])
    while queue:
        state, events = queue.popleft()
        if state == target:
            return events
        for (source, event), after in hf.TRANSITIONS.items():
            if source == state and after not in seen:
                seen.add(after)
                queue.append((after, (*events, event)))
    return None


def events_towards(current: str, task_state: str | None, *, final: bool = True) -> tuple[str, ...]:
    """The handoff events that bring a handoff in ``current`` to what ``task_state`` means.

    Empty when there is nothing to do: the state is already there or past it, the handoff is
    finished, the task state is not one we know, or it is ``submitted`` and more may follow. A
    rejection after acceptance is a failure (the machine declares no accepted → rejected), and
    unknown is reached only by a direct ``timeout``: a handoff that cannot time out from where it
    is ends unknown anyway when its span ends.
    """
    target = HANDOFF_STATE.get(task_state or "")
    if task_state == "submitted" and not final:
        return ()
    if target is None or current == target or current in hf.TERMINAL or current == hf.UNKNOWN:
        return ()
    if target == hf.UNKNOWN:
        return ("timeout",) if hf.next_state(current, "timeout") == hf.UNKNOWN else ()
    path = _shortest(current, target)
    if path is None and target == hf.REJECTED:
        path = _shortest(current, hf.FAILED)
    return path or ()

"""Handoff logic that needs no span: the aa-handoff/v1 state machine, hop state and loop detection.

Hop state lives with the request: in-process it is kept per trace id (so agents that run one after
another inside one workflow still count), across processes it travels in W3C baggage as
``reach.hops`` and ``reach.path``, beside the session's ids (``reach.session``, ``reach.user``,
``reach.task``) — all bounded, and the only values we ever read from baggage. They become span
attributes; nothing is configured from them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

# --- aa-handoff/v1 state machine -------------------------------------------------------------------
CREATED: Final = "created"
ACCEPTED: Final = "accepted"
REJECTED: Final = "rejected"
RUNNING: Final = "running"
COMMITTED: Final = "committed"
FAILED: Final = "failed"
UNKNOWN: Final = "unknown"
EXPIRED: Final = "expired"

STATES: Final = (CREATED, ACCEPTED, REJECTED, RUNNING, COMMITTED, FAILED, UNKNOWN, EXPIRED)
TERMINAL: Final = frozenset({COMMITTED, REJECTED, FAILED, EXPIRED})

#: (state, event) → next state. Only these transitions are legal.
TRANSITIONS: Final[dict[tuple[str, str], str]] = {
    (CREATED, "accept"): ACCEPTED,
    (ACCEPTED, "start"): RUNNING,
    (RUNNING, "commit"): COMMITTED,
    (RUNNING, "fail"): FAILED,
    (CREATED, "reject"): REJECTED,
    (CREATED, "timeout"): UNKNOWN,
    (RUNNING, "timeout"): UNKNOWN,
}
EVENTS: Final = frozenset(event for _, event in TRANSITIONS)

MODES: Final = ("delegate", "consult", "takeover", "escalate")
PASS_CONTROL_MODES: Final = frozenset({"takeover", "escalate"})


def next_state(state: str, event: str) -> str | None:
    """The state after ``event``, or ``None`` when the transition is not declared."""
    return TRANSITIONS.get((state, event))


def final_status(state: str, *, errored: bool) -> str:
    """The status a handoff span ends with: unfinished → unknown, an error while open → failed."""
    if state in TERMINAL or state == UNKNOWN:
        return state
    return FAILED if errored else UNKNOWN


# --- hops and loops ---------------------------------------------------------------------------------
MAX_PATH: Final = 16  # agents kept in the visited path (and in baggage)
MAX_NAME: Final = 64  # characters kept of one agent name in baggage
MAX_HOPS_VALUE: Final = 1_000_000  # a hostile baggage value cannot make the counter absurd
MAX_ID: Final = 256  # characters kept of a session, user or task id (in-process and in baggage)


def find_cycle(path: Sequence[str]) -> tuple[str, ...] | None:
    """The repeated cycle the path ends in (A,B,A,B → (A,B); A,B,C,A,B,C → (A,B,C)), else None."""
    n = len(path)
    for k in range(2, n // 2 + 1):
        tail = path[n - k :]
        if tuple(tail) == tuple(path[n - 2 * k : n - k]) and len(set(tail)) > 1:
            return tuple(tail)
    return None


@dataclass
class HopState:
    """How far one request has travelled: handoffs so far and the agents visited."""

    hops: int = 0
    path: list[str] = field(default_factory=list)

    def visit_first(self, agent: str) -> None:
        if not self.path:
            self.path.append(agent)

    def record_handoff(self, source: str, target: str) -> int:
        if not self.path:
            self.path.append(source)
        self.path.append(target)
        del self.path[:-MAX_PATH]
        self.hops += 1
        return self.hops

    def merge_remote(self, hops: int, path: Sequence[str]) -> None:
        """Adopt the state a caller sent in baggage when it is further along than ours."""
        if hops > self.hops or (hops == self.hops and len(path) > len(self.path)):
            self.hops = hops
            self.path = list(path)[-MAX_PATH:]


class HopRegistry:
    """Hop state per trace id, bounded (least recently used traces fall out first)."""

    def __init__(self, max_traces: int = 4096) -> None:
        self._max = max_traces
        self._lock = threading.Lock()
        self._states: OrderedDict[int, HopState] = OrderedDict()

    def get(self, trace_id: int) -> HopState:
        with self._lock:
            state = self._states.get(trace_id)
            if state is None:
                state = self._states[trace_id] = HopState()
                if len(self._states) > self._max:
                    self._states.popitem(last=False)
            else:
                self._states.move_to_end(trace_id)
            return state

    def peek(self, trace_id: int) -> HopState | None:
        with self._lock:
            return self._states.get(trace_id)

    def discard(self, trace_id: int) -> None:
        with self._lock:
            self._states.pop(trace_id, None)

    def __len__(self) -> int:
        return len(self._states)


# --- baggage encoding -----------------------------------------------------------------------------
def _clean(name: str) -> str:
    return name.replace(",", "_").strip()[:MAX_NAME]


def encode_path(path: Sequence[str]) -> str:
    return ",".join(_clean(p) for p in list(path)[-MAX_PATH:])


def decode_hops(raw: object) -> int:
    try:
        value = int(str(raw).strip())
    except (TypeError, ValueError):
        return 0
    return min(max(value, 0), MAX_HOPS_VALUE)


def decode_path(raw: object) -> list[str]:
    if not isinstance(raw, str) or not raw:
        return []
    names = [_clean(p) for p in raw[: MAX_PATH * (MAX_NAME + 1)].split(",")]
    return [n for n in names if n][-MAX_PATH:]


def clean_id(raw: object) -> str | None:
    """A session, user or task id as it is kept and sent: text without control characters, at most
    ``MAX_ID`` characters; ``None`` when nothing is left."""
    if raw is None:
        return None
    if isinstance(raw, str) and len(raw) <= MAX_ID and raw.isprintable() and raw.strip() == raw:
        return raw or None  # the usual case, without a copy
    text = "".join(ch for ch in str(raw)[: MAX_ID * 2] if ch.isprintable()).strip()[:MAX_ID]
    return text or None

"""Which owed pages share one message, and when: Alertmanager's aggregation groups (``group_by``,
``group_wait``, ``group_interval``) in front of the retry queue.

A group is one receiver (a person, or a schedule nobody is on call for), one severity's route and
one value of the ``group_by`` labels. The pipeline still decides per alert what is owed — its
firing, repeat, escalation, resolve — and adds it to the alert's group as a ``Notice``; ``due(now)``
hands back the messages whose time has come, one per (reason, via, step) of a group, so each
message's recipient block holds for every alert in it. A new group's first message waits
``group_wait``; later firings and resolves join the group's next message, at most one every
``group_interval``. Repeats and escalations keep their own timers (``repeat``, ``escalate_after``)
and go at the flush they come due, together when they come due together.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from reach_collector.alerting.evaluation.state import Alert

__all__ = ["ALL_LABELS", "GroupKey", "Grouper", "Message", "Notice"]

ALL_LABELS: Final = "..."  # group_by: ["..."], one group per label set (no aggregation)
CHANGES: Final = frozenset({"firing", "resolved"})  # what group_wait and group_interval pace
_ORDER: Final = {"firing": 0, "escalation": 1, "repeat": 2, "resolved": 3}

GroupKey = tuple[str, str, tuple[tuple[str, str], ...]]  # receiver, severity, group labels


@dataclass(frozen=True)
class Notice:
    """One alert's notification owed to one receiver; ``url`` None means it cannot be delivered
    (``error`` says why)."""

    alert: Alert
    receiver: str
    via: str
    kind: str
    step: int
    url: str | None
    error: str | None = None


@dataclass(frozen=True)
class Message:
    """What one webhook call carries: notices of one group with one reason, via and step."""

    receiver: str
    severity: str
    group_labels: Mapping[str, str]
    kind: str
    via: str
    step: int
    url: str | None
    error: str | None
    notices: tuple[Notice, ...]

    @property
    def group_key(self) -> str:
        """Alertmanager's ``groupKey``: the route's matchers, then the group's labels."""
        labels = ", ".join(f"{k}={json.dumps(v)}" for k, v in sorted(self.group_labels.items()))
        return f"{{}}/{{severity={json.dumps(self.severity)}}}:{{{labels}}}"

    @property
    def alerts(self) -> list[Alert]:
        return [n.alert for n in self.notices]


@dataclass
class _Group:
    labels: dict[str, str]
    pending: list[Notice] = field(default_factory=list)
    opened_at: float | None = None  # when the group first had something to send
    last_change: float | None = None  # when it last sent firings or resolves


class Grouper:
    def __init__(self, group_by: Sequence[str], wait_s: float, interval_s: float) -> None:
        self.group_by = tuple(group_by)
        self.wait_s = wait_s
        self.interval_s = interval_s
        self._groups: dict[GroupKey, _Group] = {}

    def labels(self, alert: Alert) -> dict[str, str]:
        """The alert's ``group_by`` labels (those it has)."""
        if self.group_by == (ALL_LABELS,):
            return dict(alert.labels)
        return {k: alert.labels[k] for k in self.group_by if k in alert.labels}

    def add(self, notice: Notice, now: float) -> None:
        labels = self.labels(notice.alert)
        key = (notice.receiver, notice.alert.severity, tuple(sorted(labels.items())))
        group = self._groups.setdefault(key, _Group(labels))
        if group.opened_at is None:
            group.opened_at = now
        group.pending.append(notice)

    def _ready_at(self, group: _Group) -> float:
        """When the group's pending firings and resolves may go."""
        if group.last_change is None:
            return (group.opened_at or 0.0) + self.wait_s
        return group.last_change + self.interval_s

    def due(self, now: float, owed: Callable[[Notice], bool] = lambda n: True) -> list[Message]:
        """The messages to send now (notices no longer ``owed`` are dropped), in group order and,
        within a group, firing, escalation, repeat, resolved."""
        messages: list[Message] = []
        for key, group in list(self._groups.items()):
            ready = now >= self._ready_at(group)
            going = [n for n in group.pending if ready or n.kind not in CHANGES]
            group.pending = [n for n in group.pending if not (ready or n.kind not in CHANGES)]
            if any(n.kind in CHANGES for n in going):
                group.last_change = now
            messages += self._messages(key, group, [n for n in going if owed(n)])
            idle = group.last_change is None or now >= group.last_change + self.interval_s
            if not group.pending and idle:
                del self._groups[key]  # its next news is a new group's
        return messages

    def _messages(self, key: GroupKey, group: _Group, notices: list[Notice]) -> list[Message]:
        buckets: dict[tuple[str, str, int, str | None, str | None], dict[str, Notice]] = {}
        for n in notices:  # a later notice of the same alert replaces an earlier one
            buckets.setdefault((n.kind, n.via, n.step, n.url, n.error), {})[n.alert.fingerprint] = n
        receiver, severity, _ = key
        return [
            Message(
                receiver, severity, dict(group.labels), kind, via, step, url, error, tuple(found.values())
            )
            for (kind, via, step, url, error), found in sorted(
                buckets.items(), key=lambda item: (_ORDER.get(item[0][0], 9), item[0][1], item[0][2])
            )
        ]

    def next_due(self) -> float | None:
        """When held firings or resolves may go (None: nothing held)."""
        return min((self._ready_at(g) for g in self._groups.values() if g.pending), default=None)

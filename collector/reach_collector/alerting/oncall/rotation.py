"""On-call rotation: who is on call at an instant and why, the next hand-off, and the
``/api/oncall`` body.

A layer's start and hand-offs are wall-clock times in the schedule's IANA zone, so a weekly
Monday 09:00 hand-off stays at 09:00 local across a DST change (the week it spans is an hour
shorter or longer). Member for t: ``members[k mod n]`` where hand-off k is the last one ≤ t, i.e.
``k = floor((t − start) / length)`` measured on the wall clock. An override covering t wins over
every layer (the later override over an earlier one); among layers the later one wins.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo

from reach_collector.alerting.evaluation.state import iso

__all__ = [
    "OVERRIDE",
    "Layer",
    "Override",
    "Schedule",
    "next_handoff",
    "on_call",
    "on_call_why",
    "oncall_report",
]

OVERRIDE = "override"  # the reason when an override, not a layer, puts someone on call

_HANDOFF_SEARCH = 512  # change points examined when looking for the next real hand-off


@dataclass(frozen=True)
class Layer:
    """A rotation: ``members`` take turns every ``length_s`` from ``start`` (naive, wall clock)."""

    name: str
    start: datetime
    length_s: float
    members: tuple[str, ...]
    end: datetime | None = None


@dataclass(frozen=True)
class Override:
    """``user`` is on call from ``start`` to ``end`` (naive, wall clock in the schedule's zone)."""

    user: str
    start: datetime
    end: datetime


@dataclass(frozen=True)
class Schedule:
    name: str
    layers: tuple[Layer, ...] = ()
    overrides: tuple[Override, ...] = ()
    time_zone: str = "UTC"


@lru_cache(maxsize=64)
def _zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def _instant(wall: datetime, zone: str) -> float:
    """A wall-clock time in ``zone`` → unix seconds (the earlier reading of an ambiguous time)."""
    return wall.replace(tzinfo=_zone(zone), fold=0).timestamp()


def _wall(t: float, zone: str) -> datetime:
    return datetime.fromtimestamp(t, _zone(zone)).replace(tzinfo=None)


def _boundary(layer: Layer, k: int, zone: str) -> float:
    """The instant of hand-off ``k`` (k = 0 is the layer's start)."""
    return _instant(layer.start + timedelta(seconds=layer.length_s * k), zone)


def _turn(layer: Layer, t: float, zone: str) -> int | None:
    """Index k of the hand-off in force at ``t``, or None when the layer does not cover ``t``."""
    if t < _boundary(layer, 0, zone) or (layer.end is not None and t >= _instant(layer.end, zone)):
        return None
    elapsed = (_wall(t, zone) - layer.start).total_seconds()
    k = max(0, math.floor(elapsed / layer.length_s))
    # The wall-clock estimate is off by one around a DST change; settle it on real instants.
    while k > 0 and _boundary(layer, k, zone) > t:
        k -= 1
    while _boundary(layer, k + 1, zone) <= t:
        k += 1
    return k


def on_call_why(schedule: Schedule, t: float) -> tuple[str | None, str | None]:
    """Who is on call at ``t`` (unix seconds) and why: ``override``, or the name of the layer whose
    turn it is; ``(None, None)`` when nothing covers ``t``."""
    zone = schedule.time_zone
    for override in reversed(schedule.overrides):
        if _instant(override.start, zone) <= t < _instant(override.end, zone):
            return override.user, OVERRIDE
    for layer in reversed(schedule.layers):
        k = _turn(layer, t, zone)
        if k is not None:
            return layer.members[k % len(layer.members)], layer.name
    return None, None


def on_call(schedule: Schedule, t: float) -> str | None:
    """Who is on call at ``t`` (unix seconds), or None when nothing covers ``t``."""
    return on_call_why(schedule, t)[0]


def _change_points(schedule: Schedule, t: float) -> Iterable[float]:
    """Instants after ``t`` where the answer of ``on_call`` may change (not necessarily does)."""
    zone = schedule.time_zone
    for override in schedule.overrides:
        yield from (_instant(override.start, zone), _instant(override.end, zone))
    for layer in schedule.layers:
        if layer.end is not None:
            yield _instant(layer.end, zone)
        k = _turn(layer, t, zone)
        yield _boundary(layer, 0 if k is None else k + 1, zone)


def next_handoff(schedule: Schedule, t: float) -> tuple[float, str | None] | None:
    """The first instant after ``t`` when someone else is on call, and who; None if never."""
    current = on_call(schedule, t)
    cursor = t
    for _ in range(_HANDOFF_SEARCH):
        later = [c for c in _change_points(schedule, cursor) if c > cursor]
        if not later:
            return None
        cursor = min(later)
        who = on_call(schedule, cursor)
        if who != current:
            return cursor, who
    return None


def oncall_report(schedules: Mapping[str, Schedule], at: float) -> dict[str, Any]:
    """The ``GET /api/oncall`` body (§9) at ``at`` (now, or a previewed instant): per schedule, who
    is on call then (``now``), why (``reason``: the layer's name or ``override``), and the next
    hand-off after it."""
    out = []
    for name in sorted(schedules):
        schedule = schedules[name]
        who, reason = on_call_why(schedule, at)
        nxt = next_handoff(schedule, at)
        out.append(
            {
                "schedule": name,
                "time_zone": schedule.time_zone,
                "now": who,
                "reason": reason,
                "next": nxt[1] if nxt else None,
                "next_handoff": iso(nxt[0]) if nxt else None,
            }
        )
    return {"at": iso(at), "schedules": out}

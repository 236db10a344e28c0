"""Fakes shared by the alerting tests: scripted alert data, a fake clock, a recording sender."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from reach_collector.alerting.data import AgentWindowStats, Heartbeat
from reach_collector.alerting.webhook import SendOutcome

MIN = 60.0
T0 = 1_767_600_000.0  # 2026-01-05T08:00:00Z, a whole minute

StatsFn = Callable[[float, float], Mapping[str, AgentWindowStats]]
BeatsFn = Callable[[float], Mapping[str, Heartbeat]]


class ScriptedData:
    """AlertData whose answers are functions of the (simulated) ``now``."""

    def __init__(self, stats: StatsFn | None = None, beats: BeatsFn | None = None) -> None:
        self._stats = stats or (lambda now, window: {})
        self._beats = beats or (lambda now: {})
        self.stat_calls: list[tuple[float, float]] = []
        self.fail = False

    def agent_stats(self, now: float, window_s: float) -> Mapping[str, AgentWindowStats]:
        self.stat_calls.append((now, window_s))
        if self.fail:
            raise RuntimeError("store unavailable")
        return self._stats(now, window_s)

    def heartbeats(self, now: float) -> Mapping[str, Heartbeat]:
        if self.fail:
            raise RuntimeError("store unavailable")
        return self._beats(now)


def failing_between(start: float, end: float, agent: str = "billing") -> ScriptedData:
    """``agent`` fails 8 of 10 calls in every window ending in ``[start, end)``, else all succeed."""

    def stats(now: float, window: float) -> Mapping[str, AgentWindowStats]:
        errors = 8 if start <= now < end else 0
        return {agent: AgentWindowStats(10, errors, 120.0, "billing-svc")}

    return ScriptedData(stats)


class FakeClock:
    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> float:
        self.t += seconds
        return self.t


class RecordingSender:
    """A sender that answers from a script (default: success) and records every call."""

    def __init__(self, outcomes: list[SendOutcome] | None = None) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._outcomes = list(outcomes or [])

    def __call__(self, url: str, body: Mapping[str, Any]) -> SendOutcome:
        self.calls.append((url, dict(body)))
        return self._outcomes.pop(0) if self._outcomes else SendOutcome(False, None)

    def to(self, url_part: str) -> list[dict[str, Any]]:
        return [body for url, body in self.calls if url_part in url]

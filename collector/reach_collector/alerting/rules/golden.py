"""The fixed rules (SPEC §4): P0 success rate, P1 p99 latency, P2 heartbeat lost; and the agents'
heartbeat statuses the P2 rule and ``GET /api/agents`` read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from reach_collector.alerting.evaluation.state import Sample, iso
from reach_collector.alerting.inputs.data import AlertData
from reach_collector.alerting.rules.base import AgentWindowLinks, agent_labels, enough_calls, since_breach
from reach_collector.sections.rules import HEARTBEAT, LATENCY, SUCCESS_RATE
from reach_collector.text.durations import format_duration_s

__all__ = ["HeartbeatLostRule", "LatencyRule", "SuccessRateRule", "agent_statuses"]


@dataclass(frozen=True)
class SuccessRateRule(AgentWindowLinks):
    """P0: per agent, (calls − errors) / calls over the trailing window < ``below``."""

    owner_label: ClassVar[str | None] = None  # paged by severity, not by owner
    below: float = 0.5
    window_s: float = 60.0
    min_calls: int = 5
    for_s: float = 300.0
    keep_firing_for_s: float = 0.0
    name: str = SUCCESS_RATE
    severity: str = "P0"

    def samples(self, now: float, data: AlertData) -> list[Sample]:
        out = []
        for agent, stats in sorted(data.agent_stats(now, self.window_s).items()):
            if not enough_calls(stats, self.min_calls):
                continue
            rate = (stats.calls - stats.errors) / stats.calls
            if rate < self.below:
                out.append(
                    Sample(
                        agent_labels(agent, stats.service),
                        rate,
                        {
                            "summary": f"{agent}: success rate {rate:.1%} over "
                            f"{format_duration_s(self.window_s)} (below {self.below:.0%})",
                            "value": f"{rate:.4g}",
                            "calls": str(stats.calls),
                            "errors": str(stats.errors),
                        },
                    )
                )
        return out


@dataclass(frozen=True)
class LatencyRule(AgentWindowLinks):
    """P1: per agent, p99 over the trailing window > ``factor`` × the agent's threshold."""

    owner_label: ClassVar[str | None] = None  # paged by severity, not by owner
    factor: float = 1.5
    window_s: float = 60.0
    min_calls: int = 5
    default_threshold_ms: float = 10000.0
    thresholds: Mapping[str, float] = field(default_factory=dict)
    for_s: float = 180.0
    keep_firing_for_s: float = 0.0
    name: str = LATENCY
    severity: str = "P1"

    def trace_search(self, labels: Mapping[str, str], active_at: float) -> dict[str, str] | None:
        """A latency alert's failing traces are the slow ones: above the limit the rule compares."""
        agent = labels.get("agent")
        if not agent:
            return None
        limit = self.factor * self.thresholds.get(agent, self.default_threshold_ms)
        return {
            "agent": agent,
            "min_duration_ms": f"{limit:g}",
            "since": since_breach(active_at, self.window_s),
        }

    def samples(self, now: float, data: AlertData) -> list[Sample]:
        out = []
        for agent, stats in sorted(data.agent_stats(now, self.window_s).items()):
            if not enough_calls(stats, self.min_calls) or stats.p99_ms is None:
                continue
            threshold = self.thresholds.get(agent, self.default_threshold_ms)
            if stats.p99_ms > self.factor * threshold:
                out.append(
                    Sample(
                        agent_labels(agent, stats.service),
                        stats.p99_ms,
                        {
                            "summary": f"{agent}: p99 {stats.p99_ms:.0f} ms over "
                            f"{format_duration_s(self.window_s)} (above {self.factor:g} × {threshold:g} ms)",
                            "value": f"{stats.p99_ms:.4g}",
                            "threshold_ms": f"{threshold:g}",
                            "calls": str(stats.calls),
                        },
                    )
                )
        return out


@dataclass(frozen=True)
class HeartbeatLostRule:
    """P2: ``now − last heartbeat > after``; heartbeats resuming resolves it. An agent whose last
    heartbeat said ``stopped`` (a clean exit) is not lost: it never fires."""

    owner_label: ClassVar[str | None] = None  # paged by severity, not by owner
    after_s: float = 60.0
    for_s: float = 0.0
    keep_firing_for_s: float = 0.0
    name: str = HEARTBEAT
    severity: str = "P2"
    generator_path: str = "/api/agents"

    def trace_search(self, labels: Mapping[str, str], active_at: float) -> dict[str, str] | None:
        return None  # silence has no failing traces

    def samples(self, now: float, data: AlertData) -> list[Sample]:
        out = []
        for agent, beat in sorted(data.heartbeats(now).items()):
            age = now - beat.last_seen
            if age > self.after_s and not beat.stopped:
                out.append(
                    Sample(
                        agent_labels(agent, beat.service),
                        age,
                        {
                            "summary": f"{agent}: no heartbeat for {age:.0f} s (limit {self.after_s:g} s)",
                            "value": f"{age:.0f}",
                        },
                    )
                )
        return out


def agent_statuses(data: AlertData, now: float, after_s: float = 60.0) -> dict[str, Any]:
    """The ``GET /api/agents`` body (§9): live, lost after ``after_s`` without a heartbeat, or
    stopped (deregistered by a clean exit, until its next heartbeat)."""
    agents = [
        {
            "agent_id": agent,
            "last_heartbeat": iso(beat.last_seen),
            "status": "stopped" if beat.stopped else "lost" if now - beat.last_seen > after_s else "live",
            "service": beat.service,
        }
        for agent, beat in sorted(data.heartbeats(now).items())
    ]
    return {"agents": agents}

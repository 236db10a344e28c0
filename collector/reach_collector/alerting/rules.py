"""The alert rules: P0 success rate, P1 p99 latency, P2 heartbeat lost, and the optional SLO
burn-rate rule. Each is a pure query ``samples(now, data)`` returning the agents that breach, and
says where its data shows: ``generator_path`` (over the rule's window) and ``trace_search`` (the
failing traces of one alert, linked from its pages).

A window with fewer than ``min_calls`` calls is *no data*: it yields no sample, so it never breaches
(0/0 never pages) and, like an empty PromQL result, lets a firing alert resolve.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar

from reach_collector.alerting.config import (
    HEARTBEAT,
    LATENCY,
    SUCCESS_RATE,
    AlertingConfig,
    BurnRateRuleConfig,
    BurnWindow,
)
from reach_collector.alerting.data import AgentWindowStats, AlertData
from reach_collector.alerting.state import Sample, iso
from reach_collector.durations import format_duration_s

__all__ = [
    "BurnRateRule",
    "HeartbeatLostRule",
    "LatencyRule",
    "Rule",
    "SuccessRateRule",
    "agent_statuses",
    "build_rules",
    "burning",
]

K = TypeVar("K", bound=Hashable)


class Rule(Protocol):
    """What the evaluator needs from a rule (Prometheus: name, labels, ``for``, the query)."""

    @property
    def name(self) -> str: ...

    @property
    def severity(self) -> str: ...

    @property
    def for_s(self) -> float: ...

    @property
    def keep_firing_for_s(self) -> float: ...

    @property
    def generator_path(self) -> str: ...  # the collector page that shows the rule's data

    @property
    def owner_label(self) -> str | None: ...  # the label naming the agent whose owner is paged, if any

    def samples(self, now: float, data: AlertData) -> list[Sample]: ...

    def trace_search(self, labels: Mapping[str, str], active_at: float) -> dict[str, str] | None:
        """``/api/traces`` query parameters for this alert's failing traces (None: no such search)."""
        ...


def _labels(agent: str, service: str | None) -> dict[str, str]:
    return {"agent": agent, "service": service or ""}


def _enough(stats: AgentWindowStats, min_calls: int) -> bool:
    return stats.calls >= max(min_calls, 1)


def _golden(window_s: float) -> str:
    return f"/api/metrics/golden?window={format_duration_s(window_s)}&by=agent"


def _since(active_at: float, window_s: float) -> str:
    """From the start of the window that first breached: every failing call of the episode."""
    return iso(active_at - window_s) or ""


def _error_traces(labels: Mapping[str, str], active_at: float, window_s: float) -> dict[str, str] | None:
    agent = labels.get("agent")
    return {"agent": agent, "status": "error", "since": _since(active_at, window_s)} if agent else None


@dataclass(frozen=True)
class SuccessRateRule:
    """P0: per agent, (calls − errors) / calls over the trailing window < ``below``."""

    owner_label: ClassVar[str | None] = None  # paged by severity, not by owner
    below: float = 0.5
    window_s: float = 60.0
    min_calls: int = 5
    for_s: float = 300.0
    keep_firing_for_s: float = 0.0
    name: str = SUCCESS_RATE
    severity: str = "P0"

    @property
    def generator_path(self) -> str:
        return _golden(self.window_s)

    def trace_search(self, labels: Mapping[str, str], active_at: float) -> dict[str, str] | None:
        return _error_traces(labels, active_at, self.window_s)

    def samples(self, now: float, data: AlertData) -> list[Sample]:
        out = []
        for agent, stats in sorted(data.agent_stats(now, self.window_s).items()):
            if not _enough(stats, self.min_calls):
                continue
            rate = (stats.calls - stats.errors) / stats.calls
            if rate < self.below:
                out.append(
                    Sample(
                        _labels(agent, stats.service),
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
class LatencyRule:
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

    @property
    def generator_path(self) -> str:
        return _golden(self.window_s)

    def trace_search(self, labels: Mapping[str, str], active_at: float) -> dict[str, str] | None:
        """A latency alert's failing traces are the slow ones: above the limit the rule compares."""
        agent = labels.get("agent")
        if not agent:
            return None
        limit = self.factor * self.thresholds.get(agent, self.default_threshold_ms)
        return {"agent": agent, "min_duration_ms": f"{limit:g}", "since": _since(active_at, self.window_s)}

    def samples(self, now: float, data: AlertData) -> list[Sample]:
        out = []
        for agent, stats in sorted(data.agent_stats(now, self.window_s).items()):
            if not _enough(stats, self.min_calls) or stats.p99_ms is None:
                continue
            threshold = self.thresholds.get(agent, self.default_threshold_ms)
            if stats.p99_ms > self.factor * threshold:
                out.append(
                    Sample(
                        _labels(agent, stats.service),
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
                        _labels(agent, beat.service),
                        age,
                        {
                            "summary": f"{agent}: no heartbeat for {age:.0f} s (limit {self.after_s:g} s)",
                            "value": f"{age:.0f}",
                        },
                    )
                )
        return out


@dataclass(frozen=True)
class BurnRateRule:
    """Multi-window multi-burn-rate on a success-rate SLO (SRE Workbook table 5-8).

    Breaches when, for any window pair, the error ratio over both the long and the short window
    exceeds ``factor × (1 − objective)``; the short window makes it reset quickly once fixed.
    """

    name: str
    objective: float = 0.99
    windows: tuple[BurnWindow, ...] = ()
    min_calls: int = 5
    owner_label: ClassVar[str | None] = None  # paged by severity, not by owner
    severity: str = "P1"
    for_s: float = 0.0
    keep_firing_for_s: float = 0.0

    @property
    def window_s(self) -> float:
        """The fastest pair's long window (1h in the workbook's table): what a page links to."""
        return min((w.long_s for w in self.windows), default=3600.0)

    @property
    def generator_path(self) -> str:
        return _golden(self.window_s)

    def trace_search(self, labels: Mapping[str, str], active_at: float) -> dict[str, str] | None:
        return _error_traces(labels, active_at, self.window_s)

    def samples(self, now: float, data: AlertData) -> list[Sample]:
        def counts(window_s: float) -> dict[str, tuple[int, int]]:
            return {a: (s.calls, s.errors) for a, s in data.agent_stats(now, window_s).items()}

        out = []
        for agent, (burn, window) in sorted(
            burning(self.windows, self.objective, self.min_calls, counts).items()
        ):
            long, short = data.agent_stats(now, window.long_s), data.agent_stats(now, window.short_s)
            service = long[agent].service or short[agent].service
            pair = f"{format_duration_s(window.long_s)}/{format_duration_s(window.short_s)}"
            out.append(
                Sample(
                    _labels(agent, service),
                    burn,
                    {
                        "summary": f"{agent}: error budget burning {burn:.1f}× over {pair} "
                        f"(limit {window.factor:g}×, objective {self.objective:.2%})",
                        "value": f"{burn:.4g}",
                        "windows": pair,
                    },
                )
            )
        return out


def burning(
    windows: tuple[BurnWindow, ...],
    objective: float,
    min_events: int,
    counts: Callable[[float], Mapping[K, tuple[int, int]]],
) -> dict[K, tuple[float, BurnWindow]]:
    """The multi-window multi-burn-rate test (SRE Workbook table 5-8) over any keys: ``counts(w)``
    gives each key's (events, bad events) over the trailing window ``w``. A key breaches when, for
    some window pair, the bad ratio over both the long and the short window exceeds
    ``factor × (1 − objective)`` (windows with fewer than ``min_events`` are no data); the answer
    is its long-window burn rate in the pair that burns fastest, and that pair."""
    budget = 1.0 - objective
    floor = max(min_events, 1)
    found: dict[K, tuple[float, BurnWindow]] = {}
    for window in windows:
        long, short = counts(window.long_s), counts(window.short_s)
        for key, (events, bad) in long.items():
            recent = short.get(key)
            if recent is None or events < floor or recent[0] < floor:
                continue
            long_burn, short_burn = bad / events / budget, recent[1] / recent[0] / budget
            if long_burn > window.factor and short_burn > window.factor:
                best = found.get(key)
                if best is None or long_burn > best[0]:
                    found[key] = (long_burn, window)
    return found


def build_rules(config: AlertingConfig) -> list[Rule]:
    """The enabled rules of a validated ``alerting`` section, in evaluation order."""
    rules: list[Rule] = []
    sr, lat, hb = config.success_rate, config.latency, config.heartbeat
    if sr.enabled:
        rules.append(SuccessRateRule(sr.below, sr.window_s, sr.min_calls, sr.for_s, sr.keep_firing_for_s))
    if lat.enabled:
        rules.append(
            LatencyRule(
                lat.factor,
                lat.window_s,
                lat.min_calls,
                lat.default_threshold_ms,
                dict(config.thresholds),
                lat.for_s,
                lat.keep_firing_for_s,
            )
        )
    if hb.enabled:
        rules.append(HeartbeatLostRule(hb.after_s, hb.for_s, hb.keep_firing_for_s))
    rules.extend(_burn(c) for c in config.burn_rates if c.enabled)
    # The topology rule types (SPEC §15) import this module: imported here, not at the top.
    from reach_collector.alerting.budget import budget_rules
    from reach_collector.alerting.drift import DriftRule
    from reach_collector.alerting.edge_slo import EdgeSLORule

    rules.extend(EdgeSLORule(c) for c in config.edge_slos if c.enabled)
    rules.extend(r for c in config.budgets if c.enabled for r in budget_rules(c))
    rules.extend(DriftRule(c) for c in config.drifts if c.enabled)
    return rules


def _burn(c: BurnRateRuleConfig) -> BurnRateRule:
    return BurnRateRule(c.name, c.objective, c.windows, c.min_calls, c.severity, c.for_s, c.keep_firing_for_s)


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

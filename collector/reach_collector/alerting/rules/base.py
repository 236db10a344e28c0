"""What a rule is to the evaluator (the ``Rule`` protocol: name, severity, ``for``, the query
``samples(now, data)``, where its data shows), and the label and link helpers the rules share.

A window with fewer than ``min_calls`` calls is *no data*: it yields no sample, so it never breaches
(0/0 never pages) and, like an empty PromQL result, lets a firing alert resolve.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from reach_collector.alerting.evaluation.state import Sample, iso
from reach_collector.alerting.inputs.data import AgentWindowStats, AlertData
from reach_collector.text.durations import format_duration_s

__all__ = [
    "AgentWindowLinks",
    "Rule",
    "agent_labels",
    "enough_calls",
    "error_traces",
    "golden_path",
    "since_breach",
]


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


def agent_labels(agent: str, service: str | None) -> dict[str, str]:
    return {"agent": agent, "service": service or ""}


def enough_calls(stats: AgentWindowStats, min_calls: int) -> bool:
    return stats.calls >= max(min_calls, 1)


def golden_path(window_s: float) -> str:
    return f"/api/metrics/golden?window={format_duration_s(window_s)}&by=agent"


def since_breach(active_at: float, window_s: float) -> str:
    """From the start of the window that first breached: every failing call of the episode."""
    return iso(active_at - window_s) or ""


def error_traces(labels: Mapping[str, str], active_at: float, window_s: float) -> dict[str, str] | None:
    agent = labels.get("agent")
    return {"agent": agent, "status": "error", "since": since_breach(active_at, window_s)} if agent else None


class AgentWindowLinks:
    """Where a page about an agent's calls over a rule's trailing window points: the golden metrics
    over that window, and the agent's failing traces since the window that first breached."""

    @property
    def window_s(self) -> float:
        raise NotImplementedError  # each rule has its own window

    @property
    def generator_path(self) -> str:
        return golden_path(self.window_s)

    def trace_search(self, labels: Mapping[str, str], active_at: float) -> dict[str, str] | None:
        return error_traces(labels, active_at, self.window_s)

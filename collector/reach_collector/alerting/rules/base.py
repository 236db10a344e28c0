"""What a rule is to the evaluator (the ``Rule`` protocol: name, severity, ``for``, the query
``samples(now, data)``, where its data shows), and the label and link helpers the rules share.

A window with fewer than ``min_calls`` calls is *no data*: it yields no sample, so it never breaches
(0/0 never pages) and, like an empty PromQL result, lets a firing alert resolve.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Protocol, TypeVar

from reach_collector.alerting.evaluation.state import Sample, iso
from reach_collector.alerting.inputs.data import AgentWindowStats, AlertData
from reach_collector.text.durations import format_duration_s

__all__ = ["K", "Rule"]

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

"""Alert state on ``/metrics``, as the alerting engine sets it, and the configured latency
thresholds the Prometheus rules compare against."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Final

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from reach_collector.exposition._prom import Bounded

__all__ = ["AlertState"]

_ALERT_STATES: Final = frozenset({"pending", "firing"})


class AlertState(Collector):
    """``reach_alert_state`` and ``reach_agent_latency_threshold_seconds``. Thread-safe."""

    def __init__(self, agent: Bounded, thresholds_ms: Mapping[str, float] | None = None) -> None:
        self._agent = agent
        self._lock = threading.Lock()
        self._alerts: dict[tuple[str, str, str, str], str] = {}
        self._thresholds: dict[str, float] = dict(thresholds_ms or {})

    def set_alert_state(self, alertname: str, severity: str, labels: Mapping[str, str], state: str) -> None:
        """The alerting engine's view: ``pending``/``firing`` show as 1, anything else removes it."""
        key = (alertname, severity, self._agent(labels.get("agent")), str(labels.get("service") or ""))
        with self._lock:
            if state in _ALERT_STATES:
                self._alerts[key] = state
            else:
                self._alerts.pop(key, None)

    def collect(self) -> Iterator[Metric]:
        alerts = GaugeMetricFamily(
            "reach_alert_state", "1 for each pending or firing alert.",
            labels=["alertname", "severity", "agent", "service", "alertstate"],
        )  # fmt: skip
        with self._lock:
            for key, state in sorted(self._alerts.items()):
                alerts.add_metric([*key, state], 1.0)
        yield alerts
        limits = GaugeMetricFamily(
            "reach_agent_latency_threshold_seconds", "Configured P99 threshold per agent.", labels=["agent"]
        )
        for agent, ms in sorted(self._thresholds.items()):
            limits.add_metric([agent], ms / 1000.0)
        yield limits

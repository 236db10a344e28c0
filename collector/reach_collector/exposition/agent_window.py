"""Per-agent gauges of ``/metrics`` computed at scrape by bounded store queries: the current
window's success ratio, P99 latency and calls, and each agent's last heartbeat (heartbeat spans
and ``POST /api/heartbeats``, kept in memory as they arrive and read once from the store at
start)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from reach_collector.exposition._prom import OTHER, Bounded
from reach_collector.ingest.batch_stats import BatchStats
from reach_collector.query import metrics
from reach_collector.query.heartbeats import last_heartbeats, last_posted
from reach_collector.store.base import TraceStore
from reach_otel import semconv as sc

__all__ = ["AgentWindow"]


class AgentWindow(Collector):
    """``reach_agent_success_ratio``, ``reach_agent_latency_p99_seconds``,
    ``reach_agent_window_calls`` and ``reach_agent_last_heartbeat_timestamp_seconds``.
    Thread-safe: the writer thread and the heartbeat API record beats, scrapes collect."""

    def __init__(
        self,
        store: TraceStore | None,
        agent: Bounded,
        agent_id: Bounded,
        clock: Callable[[], float] = time.time,
        *,
        window_s: float = 60.0,
        heartbeat_lookback_s: float = 86400.0,
    ) -> None:
        self._store = store
        self._agent = agent
        self._agent_id = agent_id  # heartbeat ids (gen_ai.agent.id), a namespace of their own
        self._clock = clock
        self._window_s = window_s
        self._lookback_s = heartbeat_lookback_s
        self._lock = threading.Lock()
        self._heartbeats: dict[str, float] = {}
        self._stopped: dict[str, float] = {}  # agent id label → its clean exit (no series until a beat)
        self._load_heartbeats()

    def observe(self, stats: Sequence[BatchStats]) -> None:
        """The heartbeat spans of one commit."""
        with self._lock:
            for batch in stats:
                for attrs, end in batch.beats:
                    agent_id = _agent_id(attrs)
                    if agent_id is not None:
                        self._heartbeat(agent_id, end / 1e9)

    def record_heartbeat(self, agent_id: str, unix_s: float, *, stopped: bool = False) -> None:
        """A heartbeat received by POST /api/heartbeats (OTLP heartbeat spans arrive via observe);
        ``stopped`` (a clean exit) removes the agent's series until its next heartbeat."""
        with self._lock:
            self._heartbeat(agent_id, unix_s, stopped)

    def _heartbeat(self, agent_id: str, unix_s: float, stopped: bool = False) -> None:
        label = self._agent_id(agent_id)
        self._heartbeats[label] = max(unix_s, self._heartbeats.get(label, 0.0))
        if stopped:
            self._stopped[label] = max(unix_s, self._stopped.get(label, 0.0))

    def _load_heartbeats(self) -> None:
        """The persisted ``POST /api/heartbeats`` table, read once at start: an agent lost before a
        restart keeps its series (so Prometheus's P2 stays firing), a stopped one stays away."""
        if self._store is None:
            return
        now_ns = int(self._clock() * 1_000_000_000)
        for agent_id, beat in last_posted(self._store, now_ns, self._lookback_s).items():
            self._heartbeat(agent_id, beat.last_seen, beat.stopped)

    def collect(self) -> Iterator[Metric]:
        # ``service`` is the agent's most frequent service.name in the window: the label the
        # collector's own P0/P1 alerts carry, so the Prometheus rules' alerts are the same alerts.
        success = GaugeMetricFamily(
            "reach_agent_success_ratio",
            "Success ratio of agent calls over the current window.",
            labels=["agent", "service"],
        )
        p99 = GaugeMetricFamily(
            "reach_agent_latency_p99_seconds",
            "P99 agent call latency over the current window.",
            labels=["agent", "service"],
        )
        window_calls = GaugeMetricFamily(
            "reach_agent_window_calls",
            "Agent calls ending in the current window.",
            labels=["agent", "service"],
        )
        beats = GaugeMetricFamily(
            "reach_agent_last_heartbeat_timestamp_seconds", "Unix time of the agent's last heartbeat.",
            labels=["agent", "service"],
        )  # fmt: skip
        heartbeats: dict[str, float] = {}
        services: dict[str, str] = {}  # the P2 alert's service: the last beat's, when it was a POST
        if self._store is not None:
            now_ns = int(self._clock() * 1_000_000_000)
            for agent, stats in metrics.agent_window_stats(self._store, now_ns, self._window_s).items():
                label = self._agent(agent)
                if label == OTHER:
                    continue  # a ratio or a percentile cannot be merged across agents
                calls, labels = stats["calls"], [label, str(stats["service"] or "")]
                window_calls.add_metric(labels, calls)
                if calls:
                    success.add_metric(labels, (calls - stats["errors"]) / calls)
                if stats["p99_ms"] is not None:
                    p99.add_metric(labels, stats["p99_ms"] / 1000.0)
            spans = last_heartbeats(self._store, now_ns, self._lookback_s)
            for agent_id, seen in spans.items():
                heartbeats[self._agent_id(agent_id)] = seen
            for agent_id, beat in last_posted(self._store, now_ns, self._lookback_s).items():
                # As the collector's P2 (StoreAlertData): a POST later than the last span wins.
                if beat.service and beat.last_seen > spans.get(agent_id, float("-inf")):
                    services[self._agent_id(agent_id)] = str(beat.service)
        with self._lock:
            for label, seen in self._heartbeats.items():
                heartbeats[label] = max(seen, heartbeats.get(label, 0.0))
            stopped = dict(self._stopped)
        for label, seen in sorted(heartbeats.items()):
            if label != OTHER and stopped.get(label, -1.0) < seen:
                beats.add_metric([label, services.get(label, "")], seen)
        yield from (success, p99, window_calls, beats)


def _agent_id(attributes: str | None) -> str | None:
    try:
        value = json.loads(attributes or "{}").get(sc.GEN_AI_AGENT_ID)
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) and value else None

"""Prometheus ``/metrics`` on the collector's own registry (never the global one): ``Exposition``
composes small collectors on it, as prometheus_client composes its own —

- ``agent_calls``: agent calls, durations, LLM tokens and cost (an LLM call without an agent
  attribute under its agent ancestor, from ``llm_owners``);
- ``handoff_series``: handoffs counted once with their outcome (``handoff_counts``), the service
  graph, loops and hops;
- ``agent_window``: per-agent window gauges and heartbeats, computed at scrape;
- ``alert_state``: alert state and latency thresholds, set by the alerting engine;
- ``collector_health``: spans received, rejected, queued and stored, commit latency and memory;
- ``evaluations``: evaluations stored, by the agent of their span, and the log records received;

plus the process's own ``process_*``. Counters are folded in per committed batch (``observe_commit``,
from the stats the decoder folded, so the writer pays per group, not per span). The store lookups
of the spans still waiting for another (``pending``) run on one lookup worker, never on the writer
thread that acknowledges ingest; a scrape waits for those already queued (up to ``scrape_wait_s``).
Agent and model labels are bounded: past ``max_agents`` distinct values, new ones share ``other``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Final

import pyarrow as pa
from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, ProcessCollector, generate_latest

from reach_collector.exposition._prom import OTHER, UNKNOWN, Bounded
from reach_collector.exposition.agent_calls import AgentCalls
from reach_collector.exposition.agent_window import AgentWindow
from reach_collector.exposition.alert_state import AlertState
from reach_collector.exposition.collector_health import CollectorHealth
from reach_collector.exposition.evaluations import EvaluationSeries
from reach_collector.exposition.handoff_counts import HandoffCounts
from reach_collector.exposition.handoff_series import HOP_BUCKETS, HandoffSeries
from reach_collector.exposition.llm_owners import LLMOwners
from reach_collector.exposition.lookups import LookupWorker
from reach_collector.ingest.batch_stats import DURATION_BUCKETS, BatchStats, stats_of
from reach_collector.store.base import TraceStore

__all__ = ["DURATION_BUCKETS", "HOP_BUCKETS", "OTHER", "UNKNOWN", "Exposition", "metrics_endpoint"]

SCRAPE_WAIT_S: Final = 5.0  # how long a scrape waits for the lookups queued before it


class Exposition:
    """Everything ``/metrics`` shows, on ``self.registry``. Thread-safe: the writer thread calls
    ``observe_commit``, request threads scrape and set. ``close()`` stops the lookup worker."""

    def __init__(
        self,
        store: TraceStore | None = None,
        clock: Callable[[], float] = time.time,
        *,
        max_agents: int = 100,
        window_s: float = 60.0,
        heartbeat_lookback_s: float = 86400.0,
        thresholds_ms: Mapping[str, float] | None = None,
        prices: Mapping[str, Mapping[str, float]] | None = None,
        handoff_timeout_s: float = 600.0,
        max_queued_lookups: int = 64,
        scrape_wait_s: float = SCRAPE_WAIT_S,
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.lookups = LookupWorker(max_queued_lookups)
        agent = Bounded(max_agents)  # one budget for every agent label
        # LLM calls without an agent attribute wait for their agent ancestor as long as handoffs do.
        owners = LLMOwners(store, clock, timeout_s=handoff_timeout_s, lookups=self.lookups)
        counts = HandoffCounts(store, clock, timeout_s=handoff_timeout_s, lookups=self.lookups)
        self.calls = AgentCalls(owners, agent, Bounded(max_agents), prices, scrape_wait_s)
        self.handoffs = HandoffSeries(counts, agent, scrape_wait_s)
        self.window = AgentWindow(
            store,
            agent,
            Bounded(max_agents),
            clock,
            window_s=window_s,
            heartbeat_lookback_s=heartbeat_lookback_s,
        )
        self.alerts = AlertState(agent, thresholds_ms)
        self.health = CollectorHealth(store)
        for collector in (self.calls, self.handoffs, self.window, self.alerts, self.health):
            self.registry.register(collector)
        # process_resident_memory_bytes & co. of the collector's own process (Linux /proc).
        ProcessCollector(registry=self.registry)
        # Evaluations (OTLP logs, feedback): counted when committed, their agents looked up on the
        # same worker (ingest.service calls observe_logs and observe).
        self.evaluations = EvaluationSeries(self.lookups, scrape_wait_s)
        self.registry.register(self.evaluations)
        # The owners' setters, as they were on one object.
        self.record_heartbeat = self.window.record_heartbeat
        self.set_alert_state = self.alerts.set_alert_state
        self.spans_received = self.health.spans_received
        self.set_queue_depth = self.health.set_queue_depth
        self.set_decoder_memory_source = self.health.set_decoder_memory_source
        self.set_stored_source = self.health.set_stored_source
        self.observe_write = self.health.observe_write

    def observe(self, table: pa.Table) -> None:
        """Fold one committed batch of span rows (store.schema columns) into the series."""
        self.observe_commit(table, ())

    def observe_commit(self, table: pa.Table, stats: Sequence[BatchStats | None]) -> None:
        """One commit: its rows and the stats of each request in it (built while decoding, in
        arrival order). Without stats for every request the rows are read instead."""
        if not table.num_rows:
            return
        if not stats or any(s is None for s in stats):
            known = [stats_of(zip(*(c.to_pylist() for c in table.columns), strict=True))]
        else:
            known = [s for s in stats if s is not None]
        self.calls.observe(table, known)
        self.handoffs.observe(table, known)
        self.window.observe(known)

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the lookup worker (after the lookups already queued, for up to ``timeout_s``)."""
        self.lookups.close(timeout_s)


def metrics_endpoint(exposition: Exposition) -> APIRouter:
    """``GET /metrics`` in the Prometheus text format."""
    router = APIRouter(tags=["prometheus"])

    @router.get("/metrics", include_in_schema=False)
    def scrape() -> Response:
        return Response(generate_latest(exposition.registry), media_type=CONTENT_TYPE_LATEST)

    return router

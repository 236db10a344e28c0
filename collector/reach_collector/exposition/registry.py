"""Prometheus ``/metrics`` on the collector's own registry (never the global one).

Counters and histograms are folded in per committed ingest batch (``observe_commit``, from the
stats the decoder folded, so the writer pays per group, not per span); handoffs are counted once
with their final outcome by ``HandoffCounts`` (SPEC §11); an LLM span without an agent attribute
(other instrumentations') is counted under its nearest agent ancestor once ``LLMOwners`` knows it,
as the API attributes it; cost is priced at ingest from the configured table. Per-agent window
gauges and heartbeats are computed at scrape by bounded queries; alert state and collector health
are set by their owners. Agent and model labels are bounded: past ``max_agents`` distinct values,
new ones share the ``other`` bucket.
"""

from __future__ import annotations

import json
import threading
import time
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from reach_collector.exposition._prom import OTHER, UNKNOWN, Bounded, Hist, histogram_family
from reach_collector.exposition.batch_stats import DURATION_BUCKETS, BatchStats, stats_of
from reach_collector.exposition.handoff_counts import HandoffCounts, Outcome
from reach_collector.exposition.llm_owners import LLMOwners, Owned
from reach_collector.exposition.service_graph import ServiceGraph
from reach_collector.query import metrics
from reach_collector.query.heartbeats import last_heartbeats, last_posted
from reach_collector.query.pricing import PriceTable
from reach_collector.store.base import TraceStore
from reach_otel import handoff_state
from reach_otel import semconv as sc

__all__ = ["DURATION_BUCKETS", "HOP_BUCKETS", "OTHER", "UNKNOWN", "Exposition", "metrics_endpoint"]

HOP_BUCKETS: Final = (0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 16.0)
WRITE_BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
_WRITE_BOUNDS: Final = np.asarray(WRITE_BUCKETS)
_HANDOFF_STATES: Final = frozenset(handoff_state.STATES)  # a status outside them is counted as OTHER
# aa-handoff/v1's modes and the conventions' transfer modes; another is counted as OTHER
_MODES: Final = frozenset((*handoff_state.MODES, sc.TRANSFER_PASS_CONTROL, sc.TRANSFER_RETURN_TO_CALLER))
_ALERT_STATES: Final = frozenset({"pending", "firing"})
_PENDING_TRACES: Final = 100_000  # traces whose root has not arrived yet, for the hop histogram
_LLM: Final = frozenset(sc.LLM_OPERATIONS)


class Exposition(Collector):
    """Everything ``/metrics`` shows, on ``self.registry``. Thread-safe: the writer thread calls
    ``observe``, request threads scrape."""

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
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self._store = store
        self._clock = clock
        self._window_s = window_s
        self._lookback_s = heartbeat_lookback_s
        self._lock = threading.Lock()
        self._agent = Bounded(max_agents)
        self._model = Bounded(max_agents)
        self._agent_id = Bounded(max_agents)  # heartbeat ids (gen_ai.agent.id), a namespace of their own
        self._calls: dict[tuple[str, str, str], int] = {}
        self._durations: dict[tuple[str, str], Hist] = {}
        self._tokens: dict[tuple[str, str, str], int] = {}
        self._handoffs: dict[tuple[str, str, str, str, str], int] = {}
        self._handoff_counts = HandoffCounts(store, clock, timeout_s=handoff_timeout_s)
        self._service_graph = ServiceGraph(self._agent)  # the same handoffs as Grafana's service graph
        # LLM calls without an agent attribute wait for their agent ancestor as long as handoffs do.
        self._llm_owners = LLMOwners(store, clock, timeout_s=handoff_timeout_s)
        self._prices = PriceTable(prices)
        self._cost: dict[tuple[str, str], float] = {}
        self._loops: dict[str, int] = {}
        self._hops = Hist(len(HOP_BUCKETS))
        # trace → [handoffs, agent spans, a loop detected], until its root arrives
        self._pending: OrderedDict[str, list[int]] = OrderedDict()
        self._looped_requests = 0
        self._alerts: dict[tuple[str, str, str, str], str] = {}
        self._heartbeats: dict[str, float] = {}
        self._stopped: dict[str, float] = {}  # agent id label → its clean exit (no series until a beat)
        self._thresholds: dict[str, float] = dict(thresholds_ms or {})
        self._received = 0
        self._rejected = 0
        self._queue_depth = 0
        self._queue_source: Callable[[], int] | None = None
        self._stored_source: Callable[[], int] | None = None
        self._decoder_rss: Callable[[], int | None] | None = None
        self._writes = Hist(len(WRITE_BUCKETS))
        self._load_heartbeats()
        self.registry.register(self)
        # process_resident_memory_bytes & co. of the collector's own process (Linux /proc).
        ProcessCollector(registry=self.registry)

    # --- ingest: one call per committed batch ---------------------------------------------------
    def observe(self, table: pa.Table) -> None:
        """Fold one committed batch of span rows (store.schema columns) into the series."""
        self.observe_commit(table, ())

    def observe_commit(self, table: pa.Table, stats: Sequence[BatchStats | None]) -> None:
        """One commit: its rows and the stats of each request in it (built while decoding, in
        arrival order). Without stats for every request the rows are read instead."""
        if not table.num_rows:
            return
        if not stats or any(s is None for s in stats):
            stats = [stats_of(zip(*(c.to_pylist() for c in table.columns), strict=True))]
        outcomes = self._handoff_counts.observe(table)  # may query the store: outside the lock
        owned = self._llm_owners.observe(table)  # likewise
        looped = _looped_traces(table)
        with self._lock:
            self._count_handoffs(outcomes)
            self._count_owned(owned)
            for batch in stats:
                assert batch is not None
                self._observe_calls(batch)
                self._observe_tokens(batch)
                self._observe_loops(batch)
                self._observe_hops(batch, looped)
                looped = set()  # folded in with the first request's stats
                for attrs, end in batch.beats:
                    agent_id = _agent_id(attrs)
                    if agent_id is not None:
                        self._heartbeat(agent_id, end / 1e9)

    def _observe_calls(self, stats: BatchStats) -> None:
        for (agent, op, err, bucket), (n, total) in stats.calls.items():
            if agent is None and op in _LLM:
                continue  # counted under its agent ancestor, from LLMOwners
            self._add_calls(agent, str(op), err, bucket, int(n), total)

    def _add_calls(self, agent: str | None, op: str, err: bool, bucket: int, n: int, total: float) -> None:
        key = (self._agent(agent), op)
        counter = (key[0], key[1], "error" if err else "ok")
        self._calls[counter] = self._calls.get(counter, 0) + n
        hist = self._durations.get(key)
        if hist is None:
            hist = self._durations[key] = Hist(len(DURATION_BUCKETS))
        hist.buckets[bucket] += n
        hist.sum += total

    def _observe_tokens(self, stats: BatchStats) -> None:
        for (agent, model), (tin, tout) in stats.tokens.items():
            if agent is not None:  # an LLM span without one is counted from LLMOwners
                self._add_tokens(agent, model, int(tin), int(tout))

    def _add_tokens(self, agent: str | None, model: str | None, tin: int, tout: int) -> None:
        a, m = self._agent(agent), self._model(model)
        for kind, value in (("input", tin), ("output", tout)):
            if value:
                self._tokens[(a, m, kind)] = self._tokens.get((a, m, kind), 0) + value
        # Priced by the raw model name (before bounding); an unpriced model has no cost series,
        # as /api/metrics/agents gives it a null cost, never 0.
        usd = self._prices.usd(model, tin, tout)
        if usd is not None and (tin or tout):
            self._cost[(a, m)] = self._cost.get((a, m), 0.0) + usd

    def _count_owned(self, owned: Iterable[Owned]) -> None:
        """LLM calls whose agent is now known (None: none was found)."""
        for agent, calls in owned:
            self._add_calls(agent, calls.operation, calls.error, calls.bucket, calls.n, calls.seconds)
            self._add_tokens(agent, calls.model, calls.input_tokens, calls.output_tokens)

    def _count_handoffs(self, outcomes: Sequence[Outcome]) -> None:
        self._service_graph.count(outcomes)
        for source, target, status, mode, inferred, _seconds in outcomes:
            key = (
                self._agent(source),
                self._agent(target),
                status if status in _HANDOFF_STATES else OTHER,
                mode if mode in _MODES else (UNKNOWN if mode is None else OTHER),
                "true" if inferred else "false",
            )
            self._handoffs[key] = self._handoffs.get(key, 0) + 1

    def _observe_loops(self, stats: BatchStats) -> None:
        for (source, _target, _status, _mode, loop), n in stats.handoffs.items():
            if loop:
                src = self._agent(source)
                self._loops[src] = self._loops.get(src, 0) + n

    def _observe_hops(self, stats: BatchStats, looped: set[str]) -> None:
        """Hops per request: handoff spans of a trace, observed when its root span arrives (roots
        end last), and whether any of its spans detected a loop (the API's loop rate counts
        requests, not handoffs); traces whose root never comes are forgotten past a bound."""
        for tid in looped:
            state = self._pending.get(tid)
            if state is None:
                state = self._pending[tid] = [0, 0, 0]
            state[2] = 1
        for tid, (handoffs, agent_spans, is_root) in stats.traces.items():
            state = self._pending.get(tid)
            if state is None:
                state = self._pending[tid] = [0, 0, 0]
            state[0] += handoffs
            state[1] += agent_spans
            if is_root:
                total, agents, loop = self._pending.pop(tid)
                if agents:  # Hist.observe, without a numpy call per trace
                    self._hops.buckets[bisect_left(HOP_BUCKETS, total)] += 1
                    self._hops.sum += total
                    self._looped_requests += loop
        while len(self._pending) > _PENDING_TRACES:
            self._pending.popitem(last=False)

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

    # --- setters for other owners ---------------------------------------------------------------
    def record_heartbeat(self, agent_id: str, unix_s: float, *, stopped: bool = False) -> None:
        """A heartbeat received by POST /api/heartbeats (OTLP heartbeat spans arrive via observe);
        ``stopped`` (a clean exit) removes the agent's series until its next heartbeat."""
        with self._lock:
            self._heartbeat(agent_id, unix_s, stopped)

    def set_alert_state(self, alertname: str, severity: str, labels: Mapping[str, str], state: str) -> None:
        """The alerting engine's view: ``pending``/``firing`` show as 1, anything else removes it."""
        key = (alertname, severity, self._agent(labels.get("agent")), str(labels.get("service") or ""))
        with self._lock:
            if state in _ALERT_STATES:
                self._alerts[key] = state
            else:
                self._alerts.pop(key, None)

    def spans_received(self, received: int, rejected: int = 0) -> None:
        """One ingest request: spans received (rejected ones included) and how many were rejected."""
        with self._lock:
            self._received += received
            self._rejected += rejected

    def set_queue_depth(self, spans: int | Callable[[], int]) -> None:
        """Spans waiting to be committed: a number, or a callback read at scrape."""
        with self._lock:
            if callable(spans):
                self._queue_source = spans
            else:
                self._queue_depth = int(spans)

    def set_decoder_memory_source(self, rss_bytes: Callable[[], int | None]) -> None:
        """Resident memory of the decoder worker processes, read at scrape (None: unknown)."""
        with self._lock:
            self._decoder_rss = rss_bytes

    def set_stored_source(self, spans: Callable[[], int]) -> None:
        """Spans committed to the store since start (the writer's count), read at scrape."""
        with self._lock:
            self._stored_source = spans

    def observe_write(self, seconds: float) -> None:
        """One commit's wall time (the writer, after ``store.write``)."""
        with self._lock:
            self._writes.observe(_WRITE_BOUNDS, seconds)

    # --- scrape -----------------------------------------------------------------------------------
    def collect(self) -> Iterable[Metric]:
        window = self._window_gauges()
        store = self._store_gauges()
        settled = self._handoff_counts.expire()  # pending past the timeout: settled before showing
        owned = self._llm_owners.expire()
        with self._lock:
            self._count_handoffs(settled)
            self._count_owned(owned)
            yield from self._counters()
            yield from window
            yield from self._state_gauges()
        yield from store

    def _store_gauges(self) -> list[Metric]:
        """Read at scrape: spans committed, and the store's own memory (DuckDB's buffer pool and
        allocations)."""
        out: list[Metric] = []
        with self._lock:
            stored, decoder_rss = self._stored_source, self._decoder_rss
        rss = decoder_rss() if decoder_rss is not None else None
        if rss is not None:
            gauge = GaugeMetricFamily(
                "reach_collector_decoder_resident_memory_bytes",
                "Resident memory of the decoder worker processes together (process_* is the main one).",
            )
            gauge.add_metric([], float(rss))
            out.append(gauge)
        if stored is not None:
            counter = CounterMetricFamily("reach_collector_spans_stored", "Spans committed to the store.")
            counter.add_metric([], stored())
            out.append(counter)
        held = self._store.memory_bytes() if self._store is not None else None
        if held is not None:
            gauge = GaugeMetricFamily(
                "reach_collector_duckdb_memory_bytes",
                "Memory DuckDB holds (buffer pool and allocations; capped by storage.memory_limit).",
            )
            gauge.add_metric([], float(held))
            out.append(gauge)
        return out

    def _counters(self) -> Iterator[Metric]:
        calls = CounterMetricFamily(
            "reach_agent_calls", "Spans by agent, operation and status (handoffs excluded).",
            labels=["agent", "operation", "status"],
        )  # fmt: skip
        for call, n in sorted(self._calls.items()):
            calls.add_metric(list(call), n)
        yield calls
        yield histogram_family(
            "reach_agent_call_duration_seconds", "Span duration by agent and operation.",
            ["agent", "operation"], DURATION_BUCKETS, self._durations,
        )  # fmt: skip
        tokens = CounterMetricFamily(
            "reach_agent_tokens", "LLM tokens by agent, model and type.", labels=["agent", "model", "type"]
        )
        for token, n in sorted(self._tokens.items()):
            tokens.add_metric(list(token), n)
        yield tokens
        cost = CounterMetricFamily(
            "reach_agent_cost_usd", "LLM cost by agent and model at the collector's price table (USD).",
            labels=["agent", "model"],
        )  # fmt: skip
        for priced, usd in sorted(self._cost.items()):
            cost.add_metric(list(priced), usd)
        yield cost
        handoffs = CounterMetricFamily(
            "reach_handoffs",
            "Handoffs by source, target, outcome (SPEC §11) and mode, each counted once its outcome "
            "is known; inferred=true where it came from the target's next agent span.",
            labels=["source", "target", "status", "mode", "inferred"],
        )
        for handoff, n in sorted(self._handoffs.items()):
            handoffs.add_metric(list(handoff), n)
        yield handoffs
        yield from self._service_graph.families()
        loops = CounterMetricFamily(
            "reach_loops_detected", "Handoffs that detected a loop.", labels=["agent"]
        )
        for agent, n in sorted(self._loops.items()):
            loops.add_metric([agent], n)
        yield loops
        looped = CounterMetricFamily(
            "reach_requests_looped",
            "Requests with an agent span in which a span detected a loop (counted with the hop histogram).",
        )
        looped.add_metric([], self._looped_requests)
        yield looped
        yield histogram_family(
            "reach_request_hops",
            "Handoffs per request with an agent span.",
            [],
            HOP_BUCKETS,
            {(): self._hops},
        )
        received = CounterMetricFamily("reach_collector_spans_received", "Spans received by ingest.")
        received.add_metric([], self._received)
        yield received
        rejected = CounterMetricFamily("reach_collector_spans_rejected", "Spans rejected at ingest.")
        rejected.add_metric([], self._rejected)
        yield rejected
        yield histogram_family(
            "reach_collector_write_seconds", "Commit latency of one span batch.", [], WRITE_BUCKETS,
            {(): self._writes},
        )  # fmt: skip

    def _state_gauges(self) -> Iterator[Metric]:
        depth = GaugeMetricFamily("reach_collector_queue_spans", "Spans queued, not yet committed.")
        source = self._queue_source
        depth.add_metric([], float(source() if source is not None else self._queue_depth))
        yield depth
        alerts = GaugeMetricFamily(
            "reach_alert_state", "1 for each pending or firing alert.",
            labels=["alertname", "severity", "agent", "service", "alertstate"],
        )  # fmt: skip
        for key, state in sorted(self._alerts.items()):
            alerts.add_metric([*key, state], 1.0)
        yield alerts
        limits = GaugeMetricFamily(
            "reach_agent_latency_threshold_seconds", "Configured P99 threshold per agent.", labels=["agent"]
        )
        for agent, ms in sorted(self._thresholds.items()):
            limits.add_metric([agent], ms / 1000.0)
        yield limits

    def _window_gauges(self) -> list[Metric]:
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
                with self._lock:
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
                with self._lock:
                    heartbeats[self._agent_id(agent_id)] = seen
            for agent_id, beat in last_posted(self._store, now_ns, self._lookback_s).items():
                # As the collector's P2 (StoreAlertData): a POST later than the last span wins.
                if beat.service and beat.last_seen > spans.get(agent_id, float("-inf")):
                    with self._lock:
                        services[self._agent_id(agent_id)] = str(beat.service)
        with self._lock:
            for label, seen in self._heartbeats.items():
                heartbeats[label] = max(seen, heartbeats.get(label, 0.0))
            stopped = dict(self._stopped)
        for label, seen in sorted(heartbeats.items()):
            if label != OTHER and stopped.get(label, -1.0) < seen:
                beats.add_metric([label, services.get(label, "")], seen)
        return [success, p99, window_calls, beats]


def _looped_traces(table: pa.Table) -> set[str]:
    """Trace ids of the rows that detected a loop."""
    mask = pc.fill_null(table.column("loop_detected"), False)
    if not pc.any(mask).as_py():
        return set()
    return set(pc.unique(table.filter(mask).column("trace_id")).to_pylist())


def _agent_id(attributes: str | None) -> str | None:
    try:
        value = json.loads(attributes or "{}").get(sc.GEN_AI_AGENT_ID)
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) and value else None


def metrics_endpoint(exposition: Exposition) -> APIRouter:
    """``GET /metrics`` in the Prometheus text format."""
    router = APIRouter(tags=["prometheus"])

    @router.get("/metrics", include_in_schema=False)
    def scrape() -> Response:
        return Response(generate_latest(exposition.registry), media_type=CONTENT_TYPE_LATEST)

    return router

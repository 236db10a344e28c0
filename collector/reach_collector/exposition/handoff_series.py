"""Handoffs on ``/metrics``: each counted once with its outcome (``HandoffCounts``, SPEC §11), in
``reach_handoffs`` and Grafana's service-graph series alike; loops detected; and hops per request,
observed when a trace's root span arrives."""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Final

import pyarrow as pa
import pyarrow.compute as pc
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from reach_collector.exposition._prom import OTHER, UNKNOWN, Bounded, Hist, histogram_family
from reach_collector.exposition.handoff_counts import HandoffCounts, Outcome
from reach_collector.exposition.service_graph import ServiceGraph
from reach_collector.ingest.batch_stats import BatchStats
from reach_otel import handoff_state
from reach_otel import semconv as sc

__all__ = ["HOP_BUCKETS", "HandoffSeries"]

HOP_BUCKETS: Final = (0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 16.0)
_HANDOFF_STATES: Final = frozenset(handoff_state.STATES)  # a status outside them is counted as OTHER
# aa-handoff/v1's modes and the conventions' transfer modes; another is counted as OTHER
_MODES: Final = frozenset((*handoff_state.MODES, sc.TRANSFER_PASS_CONTROL, sc.TRANSFER_RETURN_TO_CALLER))
_PENDING_TRACES: Final = 100_000  # traces whose root has not arrived yet, for the hop histogram


class HandoffSeries(Collector):
    """``reach_handoffs``, the service graph, ``reach_loops_detected``, ``reach_requests_looped``
    and ``reach_request_hops``. Thread-safe: the writer thread observes, scrapes collect."""

    def __init__(self, counts: HandoffCounts, agent: Bounded, scrape_wait_s: float) -> None:
        self._counts = counts
        self._agent = agent
        self._wait = scrape_wait_s
        self._lock = threading.Lock()
        self._handoffs: dict[tuple[str, str, str, str, str], int] = {}
        self._service_graph = ServiceGraph(agent)  # the same handoffs as Grafana's service graph
        self._loops: dict[str, int] = {}
        self._hops = Hist(len(HOP_BUCKETS))
        # trace → [handoffs, agent spans, a loop detected], until its root arrives
        self._pending: OrderedDict[str, list[int]] = OrderedDict()
        self._looped_requests = 0

    def observe(self, table: pa.Table, stats: Sequence[BatchStats]) -> None:
        """One commit: its rows (for the handoffs' outcomes and loops) and each request's stats."""
        outcomes = self._counts.observe(table)
        looped = _looped_traces(table)
        with self._lock:
            self._count(outcomes)
            for batch in stats:
                for (source, _target, _status, _mode, loop), n in batch.handoffs.items():
                    if loop:
                        src = self._agent(source)
                        self._loops[src] = self._loops.get(src, 0) + n
                self._observe_hops(batch, looped)
                looped = set()  # folded in with the first request's stats

    def collect(self) -> Iterator[Metric]:
        settled = self._counts.expire(self._wait)  # pending past the timeout: settled before showing
        with self._lock:
            self._count(settled)
            handoffs = CounterMetricFamily(
                "reach_handoffs",
                "Handoffs by source, target, outcome (SPEC §11) and mode, each counted once its outcome "
                "is known; inferred=true where it came from the target's next agent span.",
                labels=["source", "target", "status", "mode", "inferred"],
            )
            for handoff, n in sorted(self._handoffs.items()):
                handoffs.add_metric(list(handoff), n)
            out: list[Metric] = [handoffs, *self._service_graph.families()]
            loops = CounterMetricFamily(
                "reach_loops_detected", "Handoffs that detected a loop.", labels=["agent"]
            )
            for agent, n in sorted(self._loops.items()):
                loops.add_metric([agent], n)
            looped = CounterMetricFamily(
                "reach_requests_looped",
                "Requests with an agent span in which a span detected a loop"
                " (counted with the hop histogram).",
            )
            looped.add_metric([], self._looped_requests)
            hops = histogram_family(
                "reach_request_hops",
                "Handoffs per request with an agent span.",
                [],
                HOP_BUCKETS,
                {(): self._hops},
            )
        yield from (*out, loops, looped, hops)

    # --- under the lock ---------------------------------------------------------------------------
    def _count(self, outcomes: Sequence[Outcome]) -> None:
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


def _looped_traces(table: pa.Table) -> set[str]:
    """Trace ids of the rows that detected a loop."""
    mask = pc.fill_null(table.column("loop_detected"), False)
    if not pc.any(mask).as_py():
        return set()
    return set(pc.unique(table.filter(mask).column("trace_id")).to_pylist())

"""The collector's own health on ``/metrics``: spans received, rejected, queued and stored, commit
latency, and the memory the decoders and the store hold — set by their owners, read at scrape."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Final

import numpy as np
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from reach_collector.exposition._prom import Hist, histogram_family
from reach_collector.store.base import TraceStore

__all__ = ["WRITE_BUCKETS", "CollectorHealth"]

WRITE_BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
_WRITE_BOUNDS: Final = np.asarray(WRITE_BUCKETS)


class CollectorHealth(Collector):
    """Thread-safe: ingest, the writer and scrapes call it from their threads."""

    def __init__(self, store: TraceStore | None) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._received = 0
        self._rejected = 0
        self._queue_depth = 0
        self._queue_source: Callable[[], int] | None = None
        self._stored_source: Callable[[], int] | None = None
        self._decoder_rss: Callable[[], int | None] | None = None
        self._writes = Hist(len(WRITE_BUCKETS))

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

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            received, rejected = self._received, self._rejected
            writes = histogram_family(
                "reach_collector_write_seconds", "Commit latency of one span batch.", [], WRITE_BUCKETS,
                {(): self._writes},
            )  # fmt: skip
            queue_source, depth = self._queue_source, self._queue_depth
            stored, decoder_rss = self._stored_source, self._decoder_rss
        yield CounterMetricFamily(
            "reach_collector_spans_received", "Spans received by ingest.", value=received
        )
        yield CounterMetricFamily(
            "reach_collector_spans_rejected", "Spans rejected at ingest.", value=rejected
        )
        yield writes
        queued = float(queue_source() if queue_source is not None else depth)
        yield GaugeMetricFamily(
            "reach_collector_queue_spans", "Spans queued, not yet committed.", value=queued
        )
        rss = decoder_rss() if decoder_rss is not None else None
        if rss is not None:
            yield GaugeMetricFamily(
                "reach_collector_decoder_resident_memory_bytes",
                "Resident memory of the decoder worker processes together (process_* is the main one).",
                value=float(rss),
            )
        if stored is not None:
            yield CounterMetricFamily(
                "reach_collector_spans_stored", "Spans committed to the store.", value=stored()
            )
        # The store's own memory (DuckDB's buffer pool and allocations), read at scrape.
        held = self._store.memory_bytes() if self._store is not None else None
        if held is not None:
            yield GaugeMetricFamily(
                "reach_collector_duckdb_memory_bytes",
                "Memory DuckDB holds (buffer pool and allocations; capped by storage.memory_limit).",
                value=float(held),
            )

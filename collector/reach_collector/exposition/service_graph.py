"""The agent topology in the series Grafana's service graph reads (SPEC §15), so the Tempo data
source and the Node Graph panel draw it with no plugin: Tempo's metrics-generator names.

- ``traces_service_graph_request_total{client, server}`` — handoffs from ``client`` (the source
  agent) to ``server`` (the target agent);
- ``traces_service_graph_request_failed_total{client, server}`` — those whose outcome (SPEC §11)
  is failed, rejected or unknown (expired counts as unknown, as the unknown rate does);
- ``traces_service_graph_request_server_seconds`` and ``…_client_seconds`` histograms — the
  handoff span's duration. A handoff span is the one measurement of an edge: it is the source's
  view and, since the target's work runs inside it, the server's view too, so both are that span.

Each handoff is counted once, when its outcome is known (``HandoffCounts``), like
``reach_handoffs_total``; the two always agree. Buckets are Tempo's default ``histogram_buckets``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Final

import numpy as np
from prometheus_client.core import CounterMetricFamily, Metric

from reach_collector.exposition._prom import Hist, histogram_family
from reach_collector.exposition.handoff_counts import Outcome
from reach_otel import handoff_state as hf

__all__ = ["BUCKETS", "FAILED", "ServiceGraph"]

BUCKETS: Final = (0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8)  # seconds, Tempo's defaults
_BOUNDS: Final = np.asarray(BUCKETS)
FAILED: Final = frozenset({hf.FAILED, hf.REJECTED, hf.UNKNOWN, hf.EXPIRED})
_PREFIX: Final = "traces_service_graph_request"


class ServiceGraph:
    """Edge counters and histograms; not thread-safe on its own (the exposition's lock guards it).
    ``label`` bounds agent names (the exposition's agent label budget)."""

    def __init__(self, label: Callable[[str | None], str]) -> None:
        self._label = label
        self._total: dict[tuple[str, str], int] = {}
        self._failed: dict[tuple[str, str], int] = {}
        self._seconds: dict[tuple[str, str], Hist] = {}

    def count(self, outcomes: Iterable[Outcome]) -> None:
        for source, target, status, _mode, _inferred, seconds in outcomes:
            edge = (self._label(source), self._label(target))
            self._total[edge] = self._total.get(edge, 0) + 1
            if status in FAILED:
                self._failed[edge] = self._failed.get(edge, 0) + 1
            hist = self._seconds.get(edge)
            if hist is None:
                hist = self._seconds[edge] = Hist(len(BUCKETS))
            hist.observe(_BOUNDS, seconds)

    def families(self) -> Iterator[Metric]:
        labels = ["client", "server"]
        total = CounterMetricFamily(
            f"{_PREFIX}",
            "Handoffs from the client (source) agent to the server (target) agent.",
            labels=labels,
        )
        for edge, n in sorted(self._total.items()):
            total.add_metric(list(edge), n)
        yield total
        failed = CounterMetricFamily(
            f"{_PREFIX}_failed",
            "Handoffs whose outcome (SPEC §11) was failed, rejected or unknown.",
            labels=labels,
        )
        for edge in sorted(self._total):  # 0 from an edge's first handoff, so rates see the first failure
            failed.add_metric(list(edge), self._failed.get(edge, 0))
        yield failed
        for side in ("server", "client"):
            yield histogram_family(
                f"{_PREFIX}_{side}_seconds",
                f"Handoff span duration, as seen from the {side} (the handoff span is both views).",
                labels,
                BUCKETS,
                self._seconds,
            )

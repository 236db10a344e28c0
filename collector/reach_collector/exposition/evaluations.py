"""The evaluation series of ``/metrics`` (SPEC §18), a collector on the exposition's registry:

- ``reach_evaluations_total{agent, evaluation, label}`` — stored evaluations, each under the agent
  of its span (query.evaluations: the span's agent, else its nearest agent ancestor's) as known
  when it is stored; ``unknown`` when that span has not arrived;
- ``reach_evaluation_score{agent, evaluation}`` — a histogram of their scores (those with one);
- ``reach_log_records_total{outcome}`` — OTLP log records received: ``evaluation`` (stored),
  ``rejected`` (an evaluation that names none), ``dropped`` (not an evaluation: never stored).

Counted once each, when committed (every collector counts what it stored: ``sum()`` over several
gives the totals). Label values are bounded as the other series' are. The lookup of the evaluated
spans' agents runs on the exposition's lookup worker (``lookups``), never before the commit is
acknowledged; a scrape waits for the lookups queued before it. When the worker's queue is full the
evaluations are counted at once under ``unknown``: counted once, never lost.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any, Final

import numpy as np
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from reach_collector.exposition._prom import Bounded, Hist, histogram_family
from reach_collector.exposition.lookups import Inline, Lookups
from reach_collector.ingest.evaluations import LogBatch
from reach_collector.query.evaluations import LOOKBACK_NS, owners_of

__all__ = ["SCORE_BUCKETS", "EvaluationSeries"]

# Scores are often in [0, 1], sometimes on a 1–5 or 1–10 scale.
SCORE_BUCKETS: Final = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 2.0, 3.0, 4.0, 5.0, 10.0)
_BOUNDS: Final = np.asarray(SCORE_BUCKETS)
_OUTCOMES: Final = ("evaluation", "rejected", "dropped")


class EvaluationSeries(Collector):
    """Thread-safe: the writer thread observes, the lookup worker counts, scrapes read.
    ``lookups``: where the agent lookups run (at once, on the observing thread, without one)."""

    def __init__(self, lookups: Lookups | None, scrape_wait_s: float, max_values: int = 100) -> None:
        self._lock = threading.Lock()
        self._agent = Bounded(max_values)
        self._name = Bounded(max_values)
        self._label = Bounded(max_values)
        self._counts: dict[tuple[str, str, str], int] = {}
        self._scores: dict[tuple[str, str], Hist] = {}
        self._records = dict.fromkeys(_OUTCOMES, 0)
        self._lookups: Lookups = lookups if lookups is not None else Inline()
        self._wait = scrape_wait_s

    def observe_logs(self, batch: LogBatch) -> None:
        """One decoded logs request (before its rows are stored: a record dropped is counted even
        when the request's evaluations then fail to commit, and those are sent again)."""
        with self._lock:
            self._records["evaluation"] += len(batch.rows)
            self._records["rejected"] += batch.rejected
            self._records["dropped"] += batch.dropped

    def observe(self, store: Any, rows: Sequence[tuple[Any, ...]]) -> None:
        """Evaluation rows just stored (store.schema column order): their spans' agents are looked
        up in ``store`` (one bounded query per batch) on the lookup worker, then they are counted."""
        rows = list(rows)
        if not self._lookups.submit(lambda: self._count(rows, self._owners(store, rows))):
            self._count(rows, [None] * len(rows))  # the queue is full: counted now, agent unknown

    @staticmethod
    def _owners(store: Any, rows: Sequence[tuple[Any, ...]]) -> list[str | None]:
        keys = [(row[1], row[2], row[3]) for row in rows]
        oldest = min(row[0] for row in rows)
        return [where.agent for where in owners_of(store, keys, oldest - LOOKBACK_NS)]

    def _count(self, rows: Sequence[tuple[Any, ...]], agents: Sequence[str | None]) -> None:
        with self._lock:
            for row, owner in zip(rows, agents, strict=True):
                agent, name, label = self._agent(owner), self._name(row[4]), self._label(row[6])
                key = (agent, name, label)
                self._counts[key] = self._counts.get(key, 0) + 1
                if row[5] is not None:
                    hist = self._scores.get((agent, name))
                    if hist is None:
                        hist = self._scores[(agent, name)] = Hist(len(SCORE_BUCKETS))
                    hist.observe(_BOUNDS, float(row[5]))

    def collect(self) -> Iterator[Metric]:
        self._lookups.drain(self._wait)  # what was stored before the scrape began is counted in it
        with self._lock:
            counts = dict(self._counts)
            scores = {k: _copy(h) for k, h in self._scores.items()}
            records = dict(self._records)
        total = CounterMetricFamily(
            "reach_evaluations",
            "Evaluations stored, by the agent of the evaluated span",
            labels=["agent", "evaluation", "label"],
        )
        for key, n in sorted(counts.items()):
            total.add_metric(list(key), n)
        yield total
        yield histogram_family(
            "reach_evaluation_score",
            "Scores of stored evaluations",
            ["agent", "evaluation"],
            SCORE_BUCKETS,
            scores,
        )
        received = CounterMetricFamily(
            "reach_log_records", "OTLP log records received, by what became of them", labels=["outcome"]
        )
        for outcome in _OUTCOMES:
            received.add_metric([outcome], records[outcome])
        yield received


def _copy(hist: Hist) -> Hist:
    out = Hist(len(SCORE_BUCKETS))
    out.buckets = hist.buckets.copy()
    out.sum = hist.sum
    return out

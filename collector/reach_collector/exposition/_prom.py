"""Small building blocks of the Prometheus exposition: bounded label values and histograms kept
as bucket arrays (so a whole batch is folded in per group, not per span)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Final

import numpy as np
from prometheus_client.core import HistogramMetricFamily
from prometheus_client.utils import floatToGoString

__all__ = ["OTHER", "UNKNOWN", "Bounded", "Hist", "histogram_family"]

OTHER: Final = "other"  # the overflow bucket past the label limit
UNKNOWN: Final = "unknown"  # no value recorded on the span


class Bounded:
    """Admits the first ``limit`` distinct values; later ones map to ``other``. Thread-safe: one
    label budget is shared by several collectors."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, value: Any) -> str:
        if value is None or value == "":
            return UNKNOWN
        text = str(value)
        if text in self._seen:
            return text
        with self._lock:
            if text in self._seen or len(self._seen) < self._limit:
                self._seen.add(text)
                return text
        return OTHER


class Hist:
    """Per-bucket (not cumulative) counts plus the sum, for one label set."""

    __slots__ = ("buckets", "sum")

    def __init__(self, n: int) -> None:
        self.buckets = np.zeros(n + 1, dtype=np.int64)  # the last one is +Inf
        self.sum = 0.0

    def observe(self, bounds: np.ndarray[Any, Any], value: float) -> None:
        self.buckets[int(np.searchsorted(bounds, value, side="left"))] += 1
        self.sum += value


def histogram_family(
    name: str, doc: str, labels: list[str], bounds: tuple[float, ...], series: Mapping[Any, Hist]
) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, doc, labels=labels)
    for key, hist in sorted(series.items()):
        cumulative = np.cumsum(hist.buckets)
        le = [*(floatToGoString(b) for b in bounds), "+Inf"]  # type: ignore[no-untyped-call]
        family.add_metric(list(key), list(zip(le, cumulative.tolist(), strict=True)), hist.sum)
    return family

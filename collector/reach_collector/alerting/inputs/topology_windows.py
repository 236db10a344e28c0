"""The topology rules' long windows from settled per-minute counts (``settled``): edge outcomes for
the edge SLO's windows and LLM spend for budgets — the same answer as a fresh scan of each window
(``topology.edge_window_stats`` / ``topology.spend``) as long as every span arrives, and every bare
handoff's target ends, within the settle lag of the minute the span ended in.

An evaluation reads the open edge — the minutes not settled yet — once for all windows; the same
read brings the minutes that have just settled, which are kept (a gap further back, after a restart
or an eviction, is read once on its own). A window's head, the part of its first minute inside it,
comes from that minute's handoffs kept one by one (edges), or from the store (spend: one small read).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import numpy as np

from reach_collector.alerting.inputs.settled import MINUTE_NS, Array, SettledMinutes, Split, split
from reach_collector.query import topology
from reach_collector.store.base import TraceStore

__all__ = ["DEFAULT_SETTLE_S", "EdgeWindows", "SpendWindows"]

DEFAULT_SETTLE_S: Final = 600.0  # as HandoffCounts' timeout: an outcome not known by then is unknown
_MERGE_MINUTES: Final = 10  # a longer run of minutes to fill is read as counts, on its own
_AHEAD_MINUTES: Final = 15  # a head's minute is read one by one with the next ones
_LEAD_MINUTES: Final = 5  # read ahead that long before a window's head needs them
_NS: Final = 1_000_000_000

Edge = tuple[str, str]
Three = tuple[int, int, int]


class _Windows:
    def __init__(self, store: TraceStore, settle_s: float, retention_s: float, max_entries: int) -> None:
        self._store = store
        self._settle = int(settle_s * _NS)
        self._retention = int(retention_s * _NS) if retention_s > 0 else None
        self._max = max_entries
        self._latest = 0

    def _split(self, now_ns: int, window_s: float) -> Split:
        """Spans past the retention (as of the latest ``now`` asked, which follows the retention
        job's clock) may be deleted at any moment: a window's part there is read from the store, as
        a fresh scan reads it, never from the cache."""
        self._latest = max(self._latest, now_ns)
        oldest = 0 if self._retention is None else self._latest - self._retention + MINUTE_NS
        return split(now_ns - int(window_s * _NS), now_ns, self._settle, oldest)

    @staticmethod
    def _gaps(cache: SettledMinutes[Any], first: int, last: int, open_from: int) -> tuple[list[Any], int]:
        """The runs of minutes to read on their own, and where the open-edge read starts (a run
        that ends where the open edge begins is read with it)."""
        runs = cache.missing(first, last)
        if runs and runs[-1][1] == last:
            return runs[:-1], min(open_from, runs[-1][0] * MINUTE_NS)
        return runs, open_from


class EdgeWindows(_Windows):
    """``(now_ns, windows)`` → per window, per edge: (handoffs, taken on, committed)."""

    def __init__(
        self, store: TraceStore, settle_s: float, retention_s: float = 0.0, max_entries: int = 4_000_000
    ) -> None:
        super().__init__(store, settle_s, retention_s, max_entries)
        self.cache: SettledMinutes[Edge] = SettledMinutes(3, max_entries=max_entries)

    def __call__(self, now_ns: int, windows_s: Iterable[float]) -> dict[float, dict[Edge, Three]]:
        splits = {w: self._split(now_ns, w) for w in sorted(set(windows_s))}
        held = {w: sp for w, sp in splits.items() if sp.first < sp.last}
        last = (now_ns - self._settle) // MINUTE_NS
        cache, store = self.cache, self._store
        with cache.lock:
            if held:
                # From each window's first whole minute, or the minute before, which holds its head.
                first = min(sp.first - (_head_minute(sp) is not None) for sp in held.values())
                runs = cache.missing(first, last)
                if runs and runs[-1][1] == last and last - runs[-1][0] <= _MERGE_MINUTES:
                    # The minutes that have just settled: kept one handoff at a time (for the
                    # heads to come), their outcomes as of now, as the open edge's.
                    a, b = runs.pop()
                    rows = topology.edge_handoffs(store, a * MINUTE_NS, b * MINUTE_NS, until=now_ns)
                    self._keep(a, b, rows)
                for a, b in runs:  # a gap further back: counts per minute, targets by the settle lag
                    lo, hi = a * MINUTE_NS, b * MINUTE_NS
                    counted = topology.edge_counts(store, lo, hi, until=hi + self._settle, by_minute=True)
                    self._keep_counts(a, b, counted)
            totals = cache.totals(last, [sp.first for sp in held.values()]) if held else {}
            heads = {w: self._head(sp) for w, sp in held.items() if sp.head is not None}
            self._read_ahead(held.values(), last)
            cache.trim()
        # The open edge, one read for every window: per edge, its handoffs after the last settled
        # minute (the windows with settled minutes) and after each other window's start.
        starts = sorted({sp.open_from for sp in splits.values()})
        if not starts:
            return {}
        tail = topology.edge_counts(store, starts[0], now_ns, cuts=starts[1:])
        out: dict[float, dict[Edge, Three]] = {}
        for w, sp in splits.items():
            counts: dict[Edge, Three] = {e: (c[0], c[1], c[2]) for e, c in totals.get(sp.first, {}).items()}
            for edge, c in heads.get(w, {}).items():
                _add(counts, edge, (c[0], c[1], c[2]))
            i = starts.index(sp.open_from)
            for source, target, _m, base, after in tail:
                _add(counts, (source, target), base if i == 0 else after[i - 1])
            out[w] = {edge: c for edge, c in counts.items() if c[0]}
        return out

    def _keep_counts(self, first: int, last: int, rows: Sequence[topology.EdgeRow]) -> None:
        """Minutes ``[first, last)`` of per-minute edge counts, kept (an empty minute too)."""
        rows = [r for r in rows if r[2] is not None]
        minutes = np.array([r[2] for r in rows], dtype=np.int64) // MINUTE_NS
        values = np.array([r[3] for r in rows], dtype=np.int64).reshape(-1, 3)
        self.cache.put_many(first, last, minutes, [(r[0], r[1]) for r in rows], values)

    def _keep(self, first: int, last: int, rows: Sequence[tuple[str, str, int, int, int]]) -> None:
        """Minutes ``[first, last)`` of per-handoff rows, kept with their rows (an empty minute too)."""
        for m, (keys, values, ends) in _by_minute(first, last, rows).items():
            self.cache.put(m, keys, values, ends=ends)

    def _head(self, sp: Split) -> Mapping[Any, tuple[int, ...]]:
        """The head: from its minute's handoffs, read once (then kept) when not held yet; a head
        stretched by the retention edge from the store each time."""
        assert sp.head is not None
        start, end = sp.head
        minute = _head_minute(sp)
        if minute is not None:
            if not self.cache.has_rows(minute):  # filled as counts after a start: read it now
                self._read_rows(minute)
            found = self.cache.after(minute, start)
            if found is not None:
                return found
        counts: dict[Edge, Three] = {}
        for source, target, _end, took, ok in topology.edge_handoffs(
            self._store, start, end, until=end + self._settle
        ):
            _add(counts, (source, target), (1, took, ok))
        return counts

    def _read_rows(self, minute: int) -> None:
        """Keep one by one the handoffs of ``minute`` and the held minutes after it that will be the
        next heads (up to ``_AHEAD_MINUTES``), with their targets ending by the settle lag."""
        ahead = [minute]
        while ahead[-1] + 1 in self.cache and len(ahead) < _AHEAD_MINUTES:
            ahead.append(ahead[-1] + 1)
        lo, hi = minute * MINUTE_NS, (ahead[-1] + 1) * MINUTE_NS
        rows = topology.edge_handoffs(self._store, lo, hi, until=hi + self._settle)
        for m, (keys, values, ends) in _by_minute(minute, ahead[-1] + 1, rows).items():
            self.cache.put_rows(m, keys, values, ends)

    def _read_ahead(self, held: Iterable[Split], last: int) -> None:
        """Before a window's head reaches minutes held only as counts (after a start), read the next
        ones — for one window per evaluation, so the windows' reads fall in different evaluations."""
        for sp in held:
            minute = _head_minute(sp)
            if minute is None:
                continue
            for m in range(minute + 1, min(minute + 1 + _LEAD_MINUTES, last)):
                if m in self.cache and not self.cache.has_rows(m):
                    self._read_rows(m)
                    return


def _by_minute(
    first: int, last: int, rows: Sequence[tuple[str, str, int, int, int]]
) -> dict[int, tuple[list[Edge], Array, Array]]:
    """Per-handoff rows of minutes ``[first, last)``: per minute, (edges, (1, took, ok) rows, ends)."""
    picked: dict[int, list[tuple[str, str, int, int, int]]] = {m: [] for m in range(first, last)}
    for row in rows:
        m = (row[2] - 1) // MINUTE_NS
        if first <= m < last:
            picked[m].append(row)
    out = {}
    for m, kept in picked.items():
        values = np.array([(1, took, ok) for *_, took, ok in kept], dtype=np.int64).reshape(-1, 3)
        ends = np.array([end for _s, _t, end, *_ in kept], dtype=np.int64)
        out[m] = ([(s, t) for s, t, *_ in kept], values, ends)
    return out


def _head_minute(sp: Split) -> int | None:
    """The minute a window's head lies in, when it lies in one (the retention edge may stretch it)."""
    if sp.head is None or sp.head[1] - sp.head[0] >= MINUTE_NS:
        return None
    return sp.first - 1


def _add(counts: dict[Edge, Three], edge: Edge, c: Three) -> None:
    known = counts.get(edge)
    counts[edge] = c if known is None else (known[0] + c[0], known[1] + c[1], known[2] + c[2])


class SpendWindows(_Windows):
    """``(now_ns, window, per)`` → per key: (USD or None, tokens, first LLM span's end ns)."""

    def __init__(
        self,
        store: TraceStore,
        settle_s: float,
        prices: Mapping[str, Mapping[str, float]],
        retention_s: float = 0.0,
        max_entries: int = 2_000_000,
    ) -> None:
        super().__init__(store, settle_s, retention_s, max_entries)
        self._prices = prices
        self.caches: dict[str, SettledMinutes[tuple[str, str | None]]] = {}  # per agent, user or conversation

    def __call__(self, now_ns: int, window_s: float, per: str) -> dict[str, tuple[float | None, int, int]]:
        sp = self._split(now_ns, window_s)
        if sp.first == sp.last:  # the window is all open edge: nothing to keep
            return topology.spend(self._store, sp.open_from, now_ns, per, self._prices)
        store = self._store
        cache = self.caches.setdefault(per, SettledMinutes(3, (2,), self._max))
        with cache.lock:
            runs, tail_lo = self._gaps(cache, sp.first, sp.last, sp.open_from)
            for a, b in runs:
                rows = topology.spend_rows(store, a * MINUTE_NS, b * MINUTE_NS, per, by_minute=True)
                self._keep(cache, a, b, rows)
            tail = topology.spend_rows(store, tail_lo, now_ns, per, by_minute=True)
            self._keep(cache, tail_lo // MINUTE_NS, sp.last, tail)
            totals = cache.totals(sp.last, [sp.first])[sp.first]
            cache.trim()
        head = topology.spend_rows(store, sp.head[0], sp.head[1], per) if sp.head is not None else []
        live = [r for r in tail if r[2] is not None and r[2] // MINUTE_NS >= sp.last]
        counts = {key: (c[0], c[1], c[2]) for key, c in totals.items()}
        for k, model, _m, tin, tout, first in (*head, *live):
            known = counts.get((k, model))
            counts[(k, model)] = (
                (tin, tout, first)
                if known is None
                else (known[0] + tin, known[1] + tout, min(known[2], first))
            )
        ordered = sorted(counts.items(), key=lambda kc: (str(kc[0][0]), str(kc[0][1])))
        return topology.priced(((k, model, i, o, f) for (k, model), (i, o, f) in ordered), self._prices)

    @staticmethod
    def _keep(
        cache: SettledMinutes[tuple[str, str | None]],
        first: int,
        last: int,
        rows: Sequence[topology.SpendRow],
    ) -> None:
        """Minutes ``[first, last)`` of per-minute spend rows, kept (an empty minute too)."""
        rows = [r for r in rows if r[2] is not None]
        minutes = np.array([r[2] for r in rows], dtype=np.int64) // MINUTE_NS
        values = np.array([r[3:] for r in rows], dtype=np.int64).reshape(-1, 3)
        cache.put_many(first, last, minutes, [(r[0], r[1]) for r in rows], values)

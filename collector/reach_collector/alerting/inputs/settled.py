"""Per-minute counts of settled minutes, kept in memory so a long alert window is not rescanned at
every evaluation: how a window splits into a head, whole settled minutes and the open edge
(``split``), and the cache of those minutes (``SettledMinutes``).

A minute ``(m, m + 60 s]`` is *settled* once ``now`` is ``settle`` past its end: its spans are
assumed to have arrived and its handoffs' targets to have ended by then (as ``HandoffCounts``
settles outcomes after its timeout). Such a minute is read from the store once and kept; what is
newer is read at each evaluation, so late spans inside the settle lag count as a fresh scan counts
them. The cache holds only numbers, is bounded (the oldest minutes go first; what it no longer holds
is read from the store again), store-agnostic (the caller's queries fill it) and needs no state
across restarts: an empty cache refills from the store.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

import numpy as np

__all__ = ["MINUTE_NS", "SettledMinutes", "Split", "split"]

MINUTE_NS: Final = 60_000_000_000
_MAX_INT: Final = np.iinfo(np.int64).max
_BLOCK: Final = 60  # minutes combined into one block of counts for long windows
Array = np.ndarray[Any, Any]
K = TypeVar("K", bound=Hashable)  # what a row is counted under: an edge, an (agent, model) pair


@dataclass(frozen=True)
class Split:
    """The window ``(start, now]`` as its ``head`` ``(start, first·60 s]`` (None: the window starts
    on a minute), minutes ``first … last − 1`` from the cache (none when ``first == last``: then
    the whole window is the open edge) and the open edge ``(open_from, now]``, read live."""

    head: tuple[int, int] | None
    first: int
    last: int
    open_from: int


def split(start_ns: int, now_ns: int, settle_ns: int, oldest_ns: int = 0) -> Split:
    """How to answer ``(start_ns, now_ns]``: the minutes that have settled by ``now_ns`` and start
    at or after both ``start_ns`` and ``oldest_ns`` (older ones may be gone to retention) come
    from the cache; the part before them is the head."""
    last = (now_ns - settle_ns) // MINUTE_NS  # minute k = (k·M, (k+1)·M] has settled iff k < last
    first = -(-start_ns // MINUTE_NS)
    if start_ns < oldest_ns:  # the head then spans more than a minute: read from the store whole
        first = max(first, -(-oldest_ns // MINUTE_NS) + 1)
    if first >= last:
        return Split(None, last, last, start_ns)
    head_end = first * MINUTE_NS
    return Split((start_ns, head_end) if head_end > start_ns else None, first, last, last * MINUTE_NS)


class SettledMinutes(Generic[K]):
    """Per minute index (unix ns // 60 s), per key: ``fields`` integers, summed over minutes except
    those in ``min_fields`` (a minimum). A minute may keep its rows one by one with their end
    times (``put(..., ends=...)``), so the part of it after any instant can be counted (``after``).
    Not thread-safe by itself: hold ``lock`` across a read, its fill and ``trim``."""

    def __init__(self, fields: int, min_fields: Sequence[int] = (), max_entries: int = 2_000_000) -> None:
        self.fields = fields
        self._mins = [f for f in range(fields) if f in min_fields]
        self._sums = [f for f in range(fields) if f not in min_fields]
        self.max_entries = max_entries
        self.lock = threading.RLock()
        self._codes: dict[K, int] = {}
        self._keys: list[K] = []
        self._minutes: dict[int, tuple[Array, Array]] = {}  # minute → per-key (codes, values)
        self._rows: dict[int, tuple[Array, Array, Array]] = {}  # minute → per-row (ends, codes, values)
        self._blocks: dict[int, tuple[Array, Array]] = {}  # minute // _BLOCK → its minutes combined
        self._entries = 0

    @property
    def entries(self) -> int:
        """(minute, key) counts plus single rows held."""
        return self._entries

    def __contains__(self, minute: int) -> bool:
        return minute in self._minutes

    def missing(self, first: int, last: int) -> list[tuple[int, int]]:
        """The runs ``[a, b)`` of minutes in ``[first, last)`` not held, oldest first."""
        runs: list[tuple[int, int]] = []
        for m in range(first, last):
            if m in self._minutes:
                continue
            if runs and runs[-1][1] == m:
                runs[-1] = (runs[-1][0], m + 1)
            else:
                runs.append((m, m + 1))
        return runs

    def put(self, minute: int, keys: Sequence[K], values: Array, ends: Array | None = None) -> None:
        """Keep one settled minute: rows of (key, ``fields`` values) — several rows of one key are
        combined; with ``ends`` (each row's end, unix ns) the rows are kept one by one as well.
        No rows: an empty minute, held as such."""
        codes = np.fromiter((self._code(k) for k in keys), dtype=np.int64, count=len(keys))
        values = np.asarray(values, dtype=np.int64).reshape(len(keys), self.fields)
        self._drop(minute)
        uniq, inverse = np.unique(codes, return_inverse=True)
        self._minutes[minute] = (uniq, self._combine(inverse, values, len(uniq)))
        self._entries += len(uniq)
        if ends is not None:
            self._rows[minute] = (np.asarray(ends, dtype=np.int64), codes, values)
            self._entries += len(codes)

    def put_many(self, first: int, last: int, minutes: Array, keys: Sequence[K], values: Array) -> None:
        """Keep the minutes ``[first, last)`` at once from rows of (minute index, key, fields), as
        ``put`` for each (rows of other minutes are left out; a minute with none is kept empty)."""
        codes = np.fromiter((self._code(k) for k in keys), dtype=np.int64, count=len(keys))
        values = np.asarray(values, dtype=np.int64).reshape(len(keys), self.fields)
        minutes = np.asarray(minutes, dtype=np.int64).reshape(len(keys))
        inside = (minutes >= first) & (minutes < last)
        minutes, codes, values = minutes[inside], codes[inside], values[inside]
        n = max(len(self._keys), 1)
        uniq, inverse = np.unique((minutes - first) * n + codes, return_inverse=True)
        combined = self._combine(inverse.reshape(-1), values, len(uniq))
        at = np.searchsorted(uniq // n, np.arange(last - first + 1))
        for i, minute in enumerate(range(first, last)):
            self._drop(minute)
            a, b = int(at[i]), int(at[i + 1])
            self._minutes[minute] = (uniq[a:b] % n, combined[a:b])
            self._entries += b - a

    def put_rows(self, minute: int, keys: Sequence[K], values: Array, ends: Array) -> None:
        """Keep a held minute's rows one by one (read again later, for ``after``); its counts stay."""
        if minute not in self._minutes:
            raise KeyError(minute)
        old = self._rows.pop(minute, None)
        if old is not None:
            self._entries -= len(old[0])
        codes = np.fromiter((self._code(k) for k in keys), dtype=np.int64, count=len(keys))
        values = np.asarray(values, dtype=np.int64).reshape(len(keys), self.fields)
        self._rows[minute] = (np.asarray(ends, dtype=np.int64), codes, values)
        self._entries += len(codes)

    def totals(self, last: int, firsts: Iterable[int]) -> dict[int, dict[K, tuple[int, ...]]]:
        """Per ``first``: per key, its fields over minutes ``[first, last)``, all held (else a
        KeyError names the first missing one); a key with no row in the range is absent."""
        n = len(self._keys)
        sums = np.zeros((n, len(self._sums)), dtype=np.int64)
        mins = np.full((n, len(self._mins)), _MAX_INT, dtype=np.int64)
        seen = np.zeros(n, dtype=bool)
        out: dict[int, dict[K, tuple[int, ...]]] = {}
        at = last
        for first in sorted(set(firsts), reverse=True):  # nearest first: each range extends the last
            held = self._range(first, at)
            at = min(at, first)
            if held:
                codes = np.concatenate([c for c, _ in held])
                values = np.concatenate([v for _, v in held])
                for i, f in enumerate(self._sums):
                    sums[:, i] += np.bincount(codes, weights=values[:, f], minlength=n).astype(np.int64)
                for i, f in enumerate(self._mins):
                    np.minimum.at(mins[:, i], codes, values[:, f])
                seen[codes] = True
            out[first] = {self._keys[i]: self._row(sums[i], mins[i]) for i in np.flatnonzero(seen)}
        return out

    def _range(self, first: int, last: int) -> list[tuple[Array, Array]]:
        """The per-key counts of minutes ``[first, last)``: whole blocks of ``_BLOCK`` minutes
        combined once and reused (a long window is then a few dozen arrays, not thousands)."""
        out = []
        m = first
        while m < last:
            b = m // _BLOCK
            if m == b * _BLOCK and m + _BLOCK <= last:
                block = self._blocks.get(b)
                if block is None:
                    parts = [self._minutes[k] for k in range(m, m + _BLOCK)]
                    codes = np.concatenate([c for c, _ in parts])
                    uniq, inverse = np.unique(codes, return_inverse=True)
                    values = np.concatenate([v for _, v in parts])
                    block = self._blocks[b] = (uniq, self._combine(inverse, values, len(uniq)))
                out.append(block)
                m += _BLOCK
            else:
                out.append(self._minutes[m])
                m += 1
        return out

    def has_rows(self, minute: int) -> bool:
        """Whether ``minute`` is held row by row (``after`` can answer for it)."""
        return minute in self._rows

    def after(self, minute: int, after_ns: int) -> dict[K, tuple[int, ...]] | None:
        """Per key, the fields of the rows of ``minute`` ending after ``after_ns``; None when that
        minute's single rows are not held."""
        held = self._rows.get(minute)
        if held is None:
            return None
        ends, codes, values = held
        keep = ends > after_ns
        codes = codes[keep]
        uniq, inverse = np.unique(codes, return_inverse=True)
        combined = self._combine(inverse, values[keep], len(uniq))
        return {self._keys[c]: tuple(int(x) for x in row) for c, row in zip(uniq, combined, strict=True)}

    def trim(self) -> None:
        """Drop the oldest minutes until the entries fit, then forget keys no minute uses."""
        if self._entries > self.max_entries:
            for m in sorted(self._minutes):
                self._drop(m)
                if self._entries <= self.max_entries:
                    break
        if len(self._keys) > 2 * self._entries + 10_000:
            self._recode()

    # --- helpers -----------------------------------------------------------------------------------
    def _code(self, key: K) -> int:
        code = self._codes.get(key)
        if code is None:
            code = self._codes[key] = len(self._keys)
            self._keys.append(key)
        return code

    def _combine(self, inverse: Array, values: Array, n: int) -> Array:
        out = np.zeros((n, self.fields), dtype=np.int64)
        for f in self._sums:
            out[:, f] = np.bincount(inverse, weights=values[:, f], minlength=n).astype(np.int64)
        for f in self._mins:
            out[:, f] = _MAX_INT
            np.minimum.at(out[:, f], inverse, values[:, f])
        return out

    def _row(self, sums: Array, mins: Array) -> tuple[int, ...]:
        row = [0] * self.fields
        for i, f in enumerate(self._sums):
            row[f] = int(sums[i])
        for i, f in enumerate(self._mins):
            row[f] = int(mins[i])
        return tuple(row)

    def _drop(self, minute: int) -> None:
        self._blocks.pop(minute // _BLOCK, None)
        held = self._minutes.pop(minute, None)
        if held is not None:
            self._entries -= len(held[0])
        rows = self._rows.pop(minute, None)
        if rows is not None:
            self._entries -= len(rows[0])

    def _recode(self) -> None:
        parts = [c for c, _ in self._minutes.values()] + [c for _, c, _ in self._rows.values()]
        used = np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)
        remap = np.full(len(self._keys), -1, dtype=np.int64)
        remap[used] = np.arange(len(used))
        self._keys = [self._keys[i] for i in used]
        self._codes = {k: i for i, k in enumerate(self._keys)}
        self._minutes = {m: (remap[c], v) for m, (c, v) in self._minutes.items()}
        self._rows = {m: (e, remap[c], v) for m, (e, c, v) in self._rows.items()}
        self._blocks.clear()

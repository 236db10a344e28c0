"""Whose LLM calls they are, for ``/metrics``: an LLM span without an agent attribute belongs to its
nearest agent ancestor (SPEC §11), as ``/api/metrics/agents`` attributes it at query time.

OpenInference, OpenLLMetry and the OTel contrib instrumentations put no agent name on their LLM
spans. ``/metrics`` folds counters in per committed batch, and an LLM span usually ends — and is
exported — before the agent span around it, so its call, duration and tokens are held until its
owner is known, then counted once (a counter only grows):

- through the committed batch's own spans: the parent chain is walked as far as the batch has it
  (in Arrow, a step for all the batch's LLM spans at once);
- a chain that leaves the batch waits, in a bounded map keyed by the span it needs (trace, span
  id), for that span's batch — ancestors end after their descendants, so they come later — and the
  walk goes on from there;
- a walk still waiting ``lookup_after_s`` after it last moved is looked up in the store once (the
  ancestor may have come first: a task that outlived its parent), at most one query per
  ``lookup_after_s`` for all such walks, so a stream of long agent runs costs no query per batch;
  the lookup runs on the lookup worker, off the writer thread, and the walk stays matchable while
  it runs (``pending.PendingSpans``: whichever finds the owner first counts the call, once);
- past ``timeout_s`` it is looked up one last time and counted as it stands (agent ``unknown``,
  where the API reports ``unattributed_tokens``); past ``max_pending`` the oldest are counted so
  without the lookup.

Disagreements with the API by design: an ancestor arriving after the timeout, a store lookup not
reaching an ancestor that ended over ``timeout_s`` before the call started, chains deeper than 64.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from reach_collector.exposition.lookups import Lookups
from reach_collector.exposition.pending import Awaiting, Waiter
from reach_collector.ingest.batch_stats import DURATION_BUCKETS
from reach_collector.query.owners import WALK_COLUMNS, Key, SpanBatch, np_bool, spans_table, walk_up
from reach_collector.query.trace_rows import rows_of_traces
from reach_collector.store.base import TraceStore
from reach_otel import semconv as sc

__all__ = ["LLMCalls", "LLMOwners", "Owned"]

_LLM: Final = pa.array(sc.LLM_OPERATIONS, pa.string())
_BOUNDS: Final = np.asarray(DURATION_BUCKETS)
_CALL_COLUMNS: Final = (
    "operation",
    "status_code",
    "model",
    "input_tokens",
    "output_tokens",
    "duration_ms",
    "start_ns",
)


class LLMCalls(NamedTuple):
    """LLM calls of one ``BatchStats.calls`` and ``tokens`` group (one span, for a held call)."""

    operation: str
    error: bool
    bucket: int  # index into DURATION_BUCKETS (bisect_left of the seconds)
    n: int
    seconds: float  # their durations summed
    model: str | None
    input_tokens: int
    output_tokens: int


Owned = tuple[str | None, LLMCalls]  # (agent, or None when it has none), the calls


class _Pending(Waiter):
    __slots__ = ("calls", "keyed", "looked", "start")

    def __init__(self, key: Key, start: int, calls: LLMCalls) -> None:
        super().__init__(key)
        self.start, self.calls = start, calls
        self.keyed = 0.0
        self.looked = False


class LLMOwners(Awaiting[_Pending, Owned]):
    """LLM calls without an agent attribute, each waiting for its agent ancestor (``Awaiting``);
    one held past ``lookup_after_s`` is looked up in the store."""

    what = "LLM owner"

    def __init__(
        self,
        store: TraceStore | None,
        clock: Callable[[], float] = time.time,
        *,
        timeout_s: float = 600.0,
        lookup_after_s: float = 5.0,
        max_pending: int = 100_000,
        lookups: Lookups | None = None,
    ) -> None:
        super().__init__(store, clock, timeout_s=timeout_s, max_pending=max_pending, lookups=lookups)
        self._lookup_after = lookup_after_s
        self._moved: deque[_Pending] = deque()  # (re)keying order: lookup candidates
        self._last_lookup = float("-inf")

    def observe(self, table: pa.Table) -> list[Owned]:
        """One committed batch (store.schema columns): the LLM calls without an agent attribute
        whose owner is now known — from this batch, or held from earlier ones."""
        mask = pc.and_(pc.is_in(table.column("operation"), value_set=_LLM), pc.is_null(table.column("agent")))
        fresh = pc.any(mask).as_py()
        waits = self._waits
        with waits.lock:
            awaited = list(waits.waiting) if waits.live else []
        out: list[Owned] = []
        held: list[_Pending] = []
        arrived: dict[Key, tuple[str | None, Key | None]] = {}
        if fresh or awaited:
            batch = SpanBatch(table)
            if fresh:
                rows = table.select(list(_CALL_COLUMNS)).filter(mask)
                held = self._fresh(rows, np.flatnonzero(np_bool(mask)), batch, out)
            if awaited:
                sids = pa.array(list({sid for _, sid in awaited}), pa.string())
                at = np.flatnonzero(np_bool(pc.is_in(batch.span, value_set=sids)))
                if len(at):
                    keys = zip(
                        pc.take(batch.trace, pa.array(at)).to_pylist(),
                        pc.take(batch.span, pa.array(at)).to_pylist(),
                        strict=True,
                    )
                    with waits.lock:  # the rows with a span id some walk waits for, in its trace
                        wanted = [
                            (i, key) for i, key in zip(at.tolist(), keys, strict=True) if key in waits.waiting
                        ]
                    if wanted:
                        owners, missing = batch.walk(np.asarray([i for i, _ in wanted], dtype=np.int64))
                        for (_, key), owner, stop in zip(wanted, owners, missing, strict=True):
                            arrived[key] = (owner, stop)
        with waits.lock:
            now = self._clock()
            for key, (owner, stop) in arrived.items():
                self._arrived(key, owner, stop, now, out)
            for p in held:
                waits.add(p, now)
                self._keyed(p, now)
            out.extend((None, p.calls) for p in waits.take_overflow())
            due = self._take_due(now)
            expired = waits.take_expired(now)
        if due:
            # The keys looked up from: a walk that a batch moves meanwhile is not moved back.
            froms = [p.key for p in due]
            waits.look_up(due, lambda walks, found: self._found(walks, froms, found))
        out.extend(waits.settle_expired(expired, _owned))
        out.extend(waits.settled())
        return out

    def expire(self, wait_s: float = 0.0) -> list[Owned]:
        """Calls held past the timeout, counted (called at scrape, so idle collectors settle too),
        and what lookups have settled since the last call (``PendingSpans.expire``)."""
        return self._waits.expire(self._clock(), _owned, wait_s)

    def _fresh(
        self, rows: pa.Table, where: np.ndarray[Any, Any], batch: SpanBatch, out: list[Owned]
    ) -> list[_Pending]:
        """The batch's own LLM spans without an agent (``rows``, at ``where`` in the batch): those
        it has the owner (or root) of are added to ``out`` by group; the others are returned, to be
        held."""
        owners, missing = batch.walk(where)
        seconds = rows["duration_ms"].to_numpy() / 1000.0
        buckets = np.searchsorted(_BOUNDS, seconds, side="left").tolist()
        groups: dict[tuple[Any, ...], list[Any]] = {}
        held: list[_Pending] = []
        starts: list[int] = rows["start_ns"].to_pylist() if any(k is not None for k in missing) else []
        names = _CALL_COLUMNS[:5]
        for i, (op, code, model, tin, tout) in enumerate(
            zip(*(rows[c].to_pylist() for c in names), strict=True)
        ):
            key = missing[i]
            if key is not None:
                calls = LLMCalls(op, code == 2, buckets[i], 1, float(seconds[i]), model, tin or 0, tout or 0)
                held.append(_Pending(key, starts[i], calls))
                continue
            group = groups.get(gkey := (owners[i], op, code == 2, buckets[i], model))
            if group is None:
                groups[gkey] = [1, float(seconds[i]), tin or 0, tout or 0]
            else:
                group[0] += 1
                group[1] += float(seconds[i])
                group[2] += tin or 0
                group[3] += tout or 0
        for (owner, op, err, bucket, model), (n, total, tin, tout) in groups.items():
            out.append((owner, LLMCalls(op, err, bucket, n, total, model, tin, tout)))
        return held

    # --- under the lock ---------------------------------------------------------------------------
    def _keyed(self, p: _Pending, now: float, looked: bool = False) -> None:
        """``p`` waits for a new key: a lookup candidate again, unless a lookup left it there."""
        p.keyed, p.looked = now, looked
        if not looked and self._waits.store is not None:
            self._moved.append(p)

    def _arrived(
        self, key: Key, owner: str | None, missing: Key | None, now: float, out: list[Owned]
    ) -> None:
        """The span ``key`` walks waited for is in this batch: they end, or wait further up."""
        waits = self._waits
        for p in list(waits.waiting.get(key, ())):
            if missing is not None:
                waits.unkey(p)
                waits.key(p, missing)
                self._keyed(p, now)
            else:
                out.append((owner, waits.take(p).calls))

    def _take_due(self, now: float) -> list[_Pending]:
        """Walks unmoved for ``lookup_after_s`` and not looked up since, at most once per interval."""
        if self._waits.store is None or now - self._last_lookup < self._lookup_after:
            return []
        due: list[_Pending] = []
        while self._moved and (self._moved[0].done or now - self._moved[0].keyed >= self._lookup_after):
            p = self._moved.popleft()
            if not p.done and not p.looked and now - p.keyed >= self._lookup_after:
                due.append(p)
        if due:
            self._last_lookup = now
            for p in due:
                p.looked = True
        return due

    def _found(
        self, due: list[_Pending], keys: list[Key], found: dict[int, tuple[str | None, Key | None]]
    ) -> list[Owned]:
        """A due lookup's answer: owned walks are counted; the others wait further up the chain."""
        out: list[Owned] = []
        waits = self._waits
        now = self._clock()
        for i, p in enumerate(due):
            if p.done or i not in found:
                continue  # settled meanwhile (a batch, or expired at a scrape), or the query failed
            owner, missing = found[i]
            if missing is None:
                out.append((owner, waits.take(p).calls))
            elif p.key == keys[i] and missing != p.key:
                waits.unkey(p)
                waits.key(p, missing)
                self._keyed(p, now, looked=True)  # the rest of the chain is yet to come
        return out

    # --- on the lookup worker -------------------------------------------------------------------
    def _query(
        self, store: TraceStore, walks: Sequence[_Pending]
    ) -> dict[int, tuple[str | None, Key | None]]:
        """Index → (owner, key of the span still missing) through the stored spans."""
        # An ancestor ends after its descendant starts (or not long before): the rest is skipped.
        since = min(p.start for p in walks) - int(self._waits.timeout * 1e9)
        traces = sorted({p.key[0] for p in walks})
        rows = rows_of_traces(store, WALK_COLUMNS, traces, ended_since_ns=since)
        return dict(enumerate(walk_up(spans_table(rows), [p.key for p in walks])))


def _owned(p: _Pending, found: tuple[str | None, Key | None] | None) -> Owned:
    """A walk settled as it stands: its owner if the last lookup found one, else none."""
    return (found[0] if found is not None else None, p.calls)

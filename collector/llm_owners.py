"""Whose LLM calls they are, for ``/metrics``: an LLM span without an agent attribute belongs to its
nearest agent ancestor (SPEC §11), as ``/api/metrics/agents`` attributes it at query time.

OpenInference, OpenLLMetry and the OTel contrib instrumentations put no agent name on their LLM
spans. ``/metrics`` folds counters in per committed batch, and an LLM span usually ends — and is
exported — before the agent span around it, so its call, duration and tokens are held until its
owner is known, then counted once (a counter only grows):

- through the committed batch's own spans: the parent chain is walked as far as the batch has it;
- a chain that leaves the batch waits, in a bounded map keyed by the span it needs (trace, span
  id), for that span's batch — ancestors end after their descendants, so they come later — and the
  walk goes on from there;
- a walk still waiting ``lookup_after_s`` after it last moved is looked up in the store once (the
  ancestor may have come first: a task that outlived its parent), at most one query per
  ``lookup_after_s`` for all such walks, so a stream of long agent runs costs no query per batch;
- past ``timeout_s`` it is looked up one last time and counted as it stands (agent ``unknown``,
  where the API reports ``unattributed_tokens``); past ``max_pending`` the oldest are counted so
  without the lookup.

Disagreements with the API by design: an ancestor arriving after the timeout, a store lookup not
reaching an ancestor that ended over ``timeout_s`` before the call started, chains deeper than 64.
"""

from __future__ import annotations

import logging
import threading
import time
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
from reach_collector.ingest.batch_stats import DURATION_BUCKETS
from reach_collector.store.base import TraceStore

from reach_otel import semconv as sc

__all__ = ["LLMCall", "LLMOwners", "Owned"]

log = logging.getLogger(__name__)

MAX_DEPTH: Final = 64  # as the API's walk
_LLM: Final = pa.array(sc.LLM_OPERATIONS, pa.string())
_CALL_COLUMNS: Final = (
    "trace_id",
    "span_id",
    "parent_span_id",
    "operation",
    "status_code",
    "start_ns",
    "duration_ms",
    "model",
    "input_tokens",
    "output_tokens",
)
_SPAN_COLUMNS: Final = ("trace_id", "span_id", "parent_span_id", "operation", "agent")
_OWNER, _ROOT, _MISSING = 0, 1, 2


class LLMCall(NamedTuple):
    """What ``/metrics`` counts of one LLM span (the fields of ``BatchStats.calls`` and ``tokens``)."""

    operation: str
    error: bool
    bucket: int  # index into DURATION_BUCKETS (bisect_left of the seconds)
    seconds: float
    model: str | None
    input_tokens: int
    output_tokens: int


Owned = tuple[str | None, LLMCall]  # (agent, or None when it has none), the call


class _Pending:
    __slots__ = ("call", "deadline", "done", "keyed", "looked", "sid", "start", "trace")

    def __init__(self, trace: str, sid: str, start: int, call: LLMCall) -> None:
        self.trace, self.sid, self.start, self.call = trace, sid, start, call
        self.deadline = self.keyed = 0.0
        self.looked = self.done = False


_Spans = dict[tuple[str, str], tuple[str | None, str | None]]  # (trace, span) → (parent, owner)


def _walk(trace: str, sid: str | None, spans: _Spans) -> tuple[int, str | None]:
    """From span ``sid`` up: (_OWNER, agent), (_ROOT, None) or (_MISSING, the span not in ``spans``)."""
    for _ in range(MAX_DEPTH):
        if sid is None:
            return _ROOT, None
        found = spans.get((trace, sid))
        if found is None:
            return _MISSING, sid
        parent, owner = found
        if owner is not None:
            return _OWNER, owner
        sid = parent
    return _ROOT, None


class LLMOwners:
    """Thread-safe: the writer thread calls ``observe``; scrapes call ``expire``."""

    def __init__(
        self,
        store: TraceStore | None,
        clock: Callable[[], float] = time.time,
        *,
        timeout_s: float = 600.0,
        lookup_after_s: float = 5.0,
        max_pending: int = 100_000,
    ) -> None:
        self._store = store
        self._clock = clock
        self._timeout = timeout_s
        self._lookup_after = lookup_after_s
        self._max = max_pending
        self._lock = threading.Lock()
        self._waiting: dict[str, dict[str, list[_Pending]]] = {}  # trace → span needed → walks
        self._order: deque[_Pending] = deque()  # arrival order = deadline order
        self._moved: deque[_Pending] = deque()  # (re)keying order: lookup candidates
        self._last_lookup = float("-inf")
        self._live = 0

    @property
    def pending(self) -> int:
        return self._live

    def observe(self, table: pa.Table) -> list[Owned]:
        """One committed batch (store.schema columns): the LLM calls without an agent attribute
        whose owner is now known — from this batch, or held from earlier ones."""
        fresh = _unowned(table)
        with self._lock:
            waiting = list(self._waiting) if self._live else []
        interest = {p.trace for p, _ in fresh}.union(waiting)
        spans = _spans(table, interest) if interest else {}
        out: list[Owned] = []
        with self._lock:
            now = self._clock()
            if self._live:
                self._match(spans, now, out)
            for p, parent in fresh:
                state, value = _walk(p.trace, parent, spans)
                if state == _MISSING:
                    assert value is not None
                    p.deadline = now + self._timeout
                    self._order.append(p)
                    self._live += 1
                    self._key(p, value, now)
                else:
                    out.append((value, p.call))
            while self._live > self._max:
                out.append((None, self._take(self._oldest()).call))
            due = self._take_due(now)
            expired = self._take_expired(now)
        if due:
            self._look_up_due(due, out)
        out.extend(self._settle_expired(expired))
        return out

    def expire(self) -> list[Owned]:
        """Calls held past the timeout, counted (called at scrape, so idle collectors settle too)."""
        with self._lock:
            expired = self._take_expired(self._clock())
        return self._settle_expired(expired)

    # --- under the lock ---------------------------------------------------------------------------
    def _key(self, p: _Pending, sid: str, now: float, looked: bool = False) -> None:
        p.sid, p.keyed, p.looked = sid, now, looked
        self._waiting.setdefault(p.trace, {}).setdefault(sid, []).append(p)
        if not looked and self._store is not None:
            self._moved.append(p)

    def _unkey(self, p: _Pending) -> None:
        by_span = self._waiting[p.trace]
        walks = by_span[p.sid]
        walks.remove(p)
        if not walks:
            del by_span[p.sid]
            if not by_span:
                del self._waiting[p.trace]

    def _take(self, p: _Pending) -> _Pending:
        self._unkey(p)
        p.done = True
        self._live -= 1
        return p

    def _oldest(self) -> _Pending:
        while True:
            p = self._order.popleft()
            if not p.done:
                return p

    def _match(self, spans: _Spans, now: float, out: list[Owned]) -> None:
        """Walks waiting for a span this batch has: go on from it."""
        for trace, sid in spans:
            by_span = self._waiting.get(trace)
            walks = by_span.get(sid) if by_span is not None else None
            if not walks:
                continue
            state, value = _walk(trace, sid, spans)
            for p in list(walks):
                if state == _MISSING:
                    assert value is not None
                    self._unkey(p)
                    self._key(p, value, now)
                else:
                    out.append((value, self._take(p).call))

    def _take_due(self, now: float) -> list[_Pending]:
        """Walks unmoved for ``lookup_after_s`` and not looked up since, at most once per interval."""
        if self._store is None or now - self._last_lookup < self._lookup_after:
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

    def _take_expired(self, now: float) -> list[_Pending]:
        expired = []
        while self._order and (self._order[0].done or self._order[0].deadline <= now):
            p = self._order.popleft()
            if not p.done:
                expired.append(self._take(p))
        return expired

    # --- outside the lock -------------------------------------------------------------------------
    def _look_up_due(self, due: list[_Pending], out: list[Owned]) -> None:
        found = self._lookup(due)
        with self._lock:
            now = self._clock()
            for i, p in enumerate(due):
                if p.done or i not in found:
                    continue  # settled meanwhile (expired at a scrape), or the query failed
                state, value = found[i]
                if state == _MISSING:
                    assert value is not None
                    if value != p.sid:
                        self._unkey(p)
                        self._key(p, value, now, looked=True)  # the rest of the chain is yet to come
                else:
                    out.append((value, self._take(p).call))

    def _settle_expired(self, expired: list[_Pending]) -> list[Owned]:
        if not expired:
            return []
        found = self._lookup(expired) if self._store is not None else {}
        out: list[Owned] = []
        for i, p in enumerate(expired):
            state, value = found.get(i, (_ROOT, None))
            out.append((value if state == _OWNER else None, p.call))
        return out

    def _lookup(self, walks: Sequence[_Pending]) -> dict[int, tuple[int, str | None]]:
        """Index → the walk's end through the stored spans (a failed query finds nothing)."""
        if self._store is None or not walks:
            return {}
        try:
            rows = self._query(walks)
        except Exception:  # /metrics must never stop ingest or a scrape
            log.exception("LLM owner lookup failed")
            return {}
        out: dict[int, tuple[int, str | None]] = {}
        for i, sid, owner, depth in rows:
            if owner is not None:
                out[int(i)] = (_OWNER, str(owner))
            elif sid is None or depth >= MAX_DEPTH:
                out[int(i)] = (_ROOT, None)
            else:
                out[int(i)] = (_MISSING, str(sid))
        return out

    def _query(self, walks: Sequence[_Pending]) -> list[tuple[Any, ...]]:
        assert self._store is not None
        rows: list[tuple[Any, ...]] = self._store.query(
            "WITH RECURSIVE q AS (SELECT unnest(?::BIGINT[]) AS i, unnest(?::VARCHAR[]) AS trace_id,"
            " unnest(?::VARCHAR[]) AS sid),"
            " walk(i, trace_id, sid, owner, depth) AS ("
            "  SELECT i, trace_id, sid, NULL::VARCHAR, 0 FROM q"
            "  UNION ALL SELECT w.i, w.trace_id, s.parent_span_id,"
            "   CASE WHEN s.operation = ? THEN s.agent END, w.depth + 1"
            "  FROM walk w JOIN spans s ON s.trace_id = w.trace_id AND s.span_id = w.sid"
            # An ancestor ends after its descendant starts (or not long before): zone maps skip the rest.
            "  WHERE w.owner IS NULL AND w.sid IS NOT NULL AND w.depth < ? AND s.end_ns >= ?)"
            " SELECT i, sid, owner, depth FROM walk"
            " QUALIFY row_number() OVER (PARTITION BY i ORDER BY depth DESC, owner NULLS LAST) = 1",
            [
                list(range(len(walks))),
                [p.trace for p in walks],
                [p.sid for p in walks],
                sc.OP_AGENT,
                MAX_DEPTH,
                min(p.start for p in walks) - int(self._timeout * 1e9),
            ],
        )
        return rows


def _unowned(table: pa.Table) -> list[tuple[_Pending, str | None]]:
    """The batch's LLM spans without an agent, each with the parent its walk starts from."""
    op = table.column("operation")
    mask = pc.and_(pc.is_in(op, value_set=_LLM), pc.is_null(table.column("agent")))
    if not pc.any(pc.fill_null(mask, False)).as_py():
        return []
    rows = table.filter(pc.fill_null(mask, False)).select(list(_CALL_COLUMNS))
    out = []
    for trace, sid, parent, oper, code, start, ms, model, tin, tout in zip(
        *(c.to_pylist() for c in rows.columns), strict=True
    ):
        seconds = ms / 1000.0
        call = LLMCall(
            oper, code == 2, bisect_left(DURATION_BUCKETS, seconds), seconds, model, tin or 0, tout or 0
        )
        out.append((_Pending(trace, sid, start, call), parent))
    return out


def _spans(table: pa.Table, traces: set[str]) -> _Spans:
    """(trace, span) → (parent, the agent it is an agent span of) for the batch's spans in ``traces``."""
    mask = pc.is_in(table.column("trace_id"), value_set=pa.array(list(traces), pa.string()))
    rows = table.filter(mask).select(list(_SPAN_COLUMNS))
    return {
        (trace, sid): (parent, agent if op == sc.OP_AGENT else None)
        for trace, sid, parent, op, agent in zip(*(c.to_pylist() for c in rows.columns), strict=True)
    }

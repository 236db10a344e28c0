"""Spans of ``/metrics`` that wait for another span, with a deadline and a store lookup: a handoff
for its target's next run (``handoff_counts``), an LLM call for its agent ancestor
(``llm_owners``). Both keep a ``PendingSpans``:

- each waiting span (a ``Waiter``) is keyed by the span it needs, in a bounded map that every
  committed batch is matched against, and queued in arrival order, which is deadline order;
- a lookup runs on the exposition's lookup worker, off the writer thread; the waiters stay keyed
  (matchable) meanwhile, and whichever settles one first — a later batch or the lookup — takes it,
  under the lock, so each is counted once; what a lookup settles waits in an outbox for the next
  ``settled()``;
- past the deadline (or past ``max_pending``, oldest first) a waiter is taken out and settled as
  it stands, after one last lookup (not the overflow: none).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from typing import Any, ClassVar, Generic, TypeVar

from reach_collector.exposition.lookups import Inline, Lookups
from reach_collector.store.base import TraceStore

__all__ = ["Awaiting", "PendingSpans", "Waiter"]

log = logging.getLogger(__name__)


class Waiter:
    """One pending span: the span it needs (``key``), its deadline, and whether it is settled."""

    __slots__ = ("deadline", "done", "key")

    def __init__(self, key: Any) -> None:
        self.key: Any = key
        self.deadline = 0.0
        self.done = False


W = TypeVar("W", bound=Waiter)
R = TypeVar("R")
# waiters → index → what the store holds for that waiter (absent: nothing found)
Query = Callable[[TraceStore, Sequence[W]], dict[int, Any]]


class PendingSpans(Generic[W, R]):
    """The waiters of one kind. Methods under "the lock" are called with ``lock`` held; the others
    without it (a lookup may run at once, with ``Inline``, and take the lock itself)."""

    def __init__(
        self,
        store: TraceStore | None,
        query: Query[W],
        *,
        timeout_s: float,
        max_pending: int,
        lookups: Lookups | None = None,
        what: str = "pending span",
    ) -> None:
        self.store = store
        self.timeout = timeout_s
        self.lock = threading.Lock()
        self.waiting: dict[Any, list[W]] = {}  # the span needed → its waiters
        self._query = query
        self._max = max_pending
        self._lookups: Lookups = lookups if lookups is not None else Inline()
        self._what = what
        self._order: deque[W] = deque()  # arrival order = deadline order
        self._live = 0
        self._outbox: list[R] = []  # settled by lookups, not yet handed out

    @property
    def live(self) -> int:
        return self._live

    # --- under the lock ---------------------------------------------------------------------------
    def add(self, w: W, now: float) -> None:
        w.deadline = now + self.timeout
        self._order.append(w)
        self._live += 1
        self.key(w, w.key)

    def key(self, w: W, key: Hashable) -> None:
        w.key = key
        self.waiting.setdefault(key, []).append(w)

    def unkey(self, w: W) -> None:
        waiters = self.waiting[w.key]
        waiters.remove(w)
        if not waiters:
            del self.waiting[w.key]

    def take(self, w: W) -> W:
        """``w`` is settled: no batch or lookup will match it again."""
        self.unkey(w)
        w.done = True
        self._live -= 1
        return w

    def take_overflow(self) -> list[W]:
        """The oldest waiters past ``max_pending``."""
        out = []
        while self._live > self._max:
            w = self._order.popleft()
            if not w.done:
                out.append(self.take(w))
        return out

    def take_expired(self, now: float) -> list[W]:
        out = []
        while self._order and (self._order[0].done or self._order[0].deadline <= now):
            w = self._order.popleft()
            if not w.done:
                out.append(self.take(w))
        return out

    # --- without the lock -------------------------------------------------------------------------
    def look_up(self, waiters: list[W], found: Callable[[list[W], dict[int, Any]], list[R]]) -> bool:
        """Look ``waiters`` up in the store on the lookup worker, then, under the lock, keep what
        ``found(waiters, rows)`` settles for ``settled()`` (``found`` skips a waiter settled
        meanwhile: ``done``). False when the worker's queue is full: the lookup is dropped."""

        def job() -> None:
            rows = self._rows(waiters)
            with self.lock:
                self._outbox.extend(found(waiters, rows))

        return self._lookups.submit(job)

    def settle_expired(self, expired: list[W], final: Callable[[W, Any], R]) -> list[R]:
        """Waiters taken out: settled by ``final(waiter, what the store holds or None)`` after one
        last lookup — returned now when it is dropped, or there is no store."""
        if not expired:
            return []
        if self.store is not None and self.look_up(
            expired, lambda ws, rows: [final(w, rows.get(i)) for i, w in enumerate(ws)]
        ):
            return []
        return [final(w, None) for w in expired]

    def expire(self, now: float, final: Callable[[W, Any], R], wait_s: float = 0.0) -> list[R]:
        """Waiters past their deadline settled by ``final`` after their last lookup, and what lookups
        have settled since the last call — after waiting up to ``wait_s`` for the lookups queued
        (a scrape: what was acknowledged before it is in it)."""
        with self.lock:
            expired = self.take_expired(now)
        out = self.settle_expired(expired, final)
        if wait_s > 0:
            self._lookups.drain(wait_s)
        return out + self.settled()

    def settled(self) -> list[R]:
        """What lookups settled since the last call."""
        with self.lock:
            out, self._outbox = self._outbox, []
        return out

    def _rows(self, waiters: Sequence[W]) -> dict[int, Any]:
        if self.store is None or not waiters:
            return {}
        try:
            return self._query(self.store, waiters)
        except Exception:  # a failed query finds nothing: /metrics must never stop ingest or a scrape
            log.exception("%s lookup failed", self._what)
            return {}


class Awaiting(Generic[W, R]):
    """A kind of span that waits for another, over one ``PendingSpans`` (``_waits``). Thread-safe:
    the writer thread calls ``observe``; scrapes call ``expire``. Store lookups run on ``lookups``
    (at once without one); what they settle is returned by the next call. A subclass names what
    it waits for (``what``) and how the store is asked (``_query``)."""

    what: ClassVar[str]

    def __init__(
        self,
        store: TraceStore | None,
        clock: Callable[[], float] = time.time,
        *,
        timeout_s: float = 600.0,
        max_pending: int = 100_000,
        lookups: Lookups | None = None,
    ) -> None:
        self._clock = clock
        self._waits: PendingSpans[W, R] = PendingSpans(
            store, self._query, timeout_s=timeout_s, max_pending=max_pending, lookups=lookups, what=self.what
        )

    def _query(self, store: TraceStore, waiters: Sequence[W]) -> dict[int, Any]:
        raise NotImplementedError

    @property
    def pending(self) -> int:
        return self._waits.live

"""Counts each handoff once, with its final outcome (SPEC §11), for ``reach_handoffs_total``.

A Prometheus counter must only grow, but an inferred outcome depends on a span that may arrive
after the handoff (often in the same batch, sometimes later, on a multi-collector setup even at
another collector). So a handoff is counted when its outcome is known, never before:

- a recorded outcome at once, when its batch is committed;
- an inferred one as soon as the target's next agent span is in the store: looked up once when the
  handoff is committed (the target may have ended first, or in the same batch), then matched
  against every later committed batch from a bounded in-memory map keyed by (trace, target);
- a handoff still pending after ``timeout_s`` is looked up in the store one last time (another
  collector may have stored the target's span) and otherwise counted ``unknown``, inferred; past
  ``max_pending`` the oldest are settled the same way without the lookup.

Counting from the store at scrape instead would make the counter fall when retention drops spans
and cost a scan per scrape; this costs one small, time-bounded query per committed batch that has
handoffs without a recorded outcome. The only disagreement with ``/api/metrics/agents`` is by
design: a target span arriving after the timeout, or a later-starting run of the target that ends
before an earlier-starting one (spans arrive in end order) — the first one seen decides.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

from reach_collector.query.handoff_outcome import NO_OUTCOME, from_target, is_recorded, next_run
from reach_collector.query.trace_rows import rows_of_traces
from reach_collector.store.base import TraceStore
from reach_otel import handoff_state as hf
from reach_otel import semconv as sc

__all__ = ["HandoffCounts", "Outcome"]

log = logging.getLogger(__name__)

# (source, target, status, mode, inferred, seconds): seconds = the handoff span's duration
Outcome = tuple[str | None, str | None, str, str | None, bool, float]
_HANDOFF_COLUMNS: Final = (
    "trace_id",
    "start_ns",
    "handoff_source",
    "handoff_target",
    "handoff_status",
    "handoff_mode",
    "duration_ms",
    "attributes",
)
_AGENT_COLUMNS: Final = ("trace_id", "agent", "start_ns", "span_id", "status_code")


class _Pending:
    __slots__ = ("deadline", "done", "mode", "seconds", "source", "start", "target", "trace")

    def __init__(
        self, trace: str, target: str, start: int, source: str | None, mode: str | None, seconds: float
    ) -> None:
        self.trace, self.target, self.start, self.source, self.mode = trace, target, start, source, mode
        self.seconds = seconds
        self.deadline = 0.0
        self.done = False

    def settle(self, code: int | None) -> Outcome:
        return (self.source, self.target, from_target(code), self.mode, True, self.seconds)


class HandoffCounts:
    """Thread-safe: the writer thread calls ``observe``; scrapes call ``expire``."""

    def __init__(
        self,
        store: TraceStore | None,
        clock: Callable[[], float] = time.time,
        *,
        timeout_s: float = 600.0,
        max_pending: int = 100_000,
    ) -> None:
        self._store = store
        self._clock = clock
        self._timeout = timeout_s
        self._max = max_pending
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, str], list[_Pending]] = {}
        self._order: deque[_Pending] = deque()  # arrival order = deadline order
        self._live = 0

    @property
    def pending(self) -> int:
        return self._live

    def observe(self, table: pa.Table) -> list[Outcome]:
        """One committed batch (store.schema columns): the handoffs whose outcome is now known."""
        out: list[Outcome] = []
        fresh: list[_Pending] = []
        op = table.column("operation")
        mask = pc.equal(op, sc.OP_HANDOFF)
        if pc.any(mask).as_py():
            rows = table.filter(mask).select(list(_HANDOFF_COLUMNS))
            for trace, start, source, target, status, mode, ms, attrs in zip(
                *(c.to_pylist() for c in rows.columns), strict=True
            ):
                seconds = (ms or 0.0) / 1000.0
                transitions = _transitions(attrs) if status in NO_OUTCOME else None
                if is_recorded(status, transitions):
                    out.append((source, target, status, mode, False, seconds))
                elif target is None:  # no target: no span to wait for
                    out.append((source, None, hf.UNKNOWN, mode, True, seconds))
                else:
                    fresh.append(_Pending(trace, target, start, source, mode, seconds))
        if fresh and self._store is not None:
            found = self._lookup(fresh)
            for i, code in found.items():
                out.append(fresh[i].settle(code))
            fresh = [p for i, p in enumerate(fresh) if i not in found]
        with self._lock:
            now = self._clock()
            for p in fresh:
                self._add(p, now)
            if self._live:
                out.extend(self._match(table, op))
            while self._live > self._max:
                out.append(self._take_oldest().settle(None))
            expired = self._take_expired(now)
        out.extend(self._settle_expired(expired))
        return out

    def expire(self) -> list[Outcome]:
        """Handoffs pending past the timeout, settled (called at scrape, so idle collectors settle too)."""
        with self._lock:
            expired = self._take_expired(self._clock())
        return self._settle_expired(expired)

    # --- under the lock ---------------------------------------------------------------------------
    def _add(self, p: _Pending, now: float) -> None:
        p.deadline = now + self._timeout
        self._pending.setdefault((p.trace, p.target), []).append(p)
        self._order.append(p)
        self._live += 1

    def _remove(self, p: _Pending) -> None:
        p.done = True
        key = (p.trace, p.target)
        waiting = self._pending.get(key)
        if waiting is not None:
            waiting.remove(p)
            if not waiting:
                del self._pending[key]
        self._live -= 1

    def _take_oldest(self) -> _Pending:
        while True:
            p = self._order.popleft()
            if not p.done:
                self._remove(p)
                return p

    def _take_expired(self, now: float) -> list[_Pending]:
        expired = []
        while self._order and (self._order[0].done or self._order[0].deadline <= now):
            p = self._order.popleft()
            if not p.done:
                self._remove(p)
                expired.append(p)
        return expired

    def _match(self, table: pa.Table, op: pa.ChunkedArray) -> list[Outcome]:
        """Pending handoffs whose target ran in this batch (the earliest run after each decides)."""
        mask = pc.equal(op, sc.OP_AGENT)
        if not pc.any(mask).as_py():
            return []
        runs: dict[tuple[str, str], list[tuple[int, str, int]]] = {}
        agents = table.filter(mask).select(list(_AGENT_COLUMNS))
        for trace, agent, start, span_id, code in zip(*(c.to_pylist() for c in agents.columns), strict=True):
            if (trace, agent) in self._pending:
                runs.setdefault((trace, agent), []).append((start, span_id, code))
        out: list[Outcome] = []
        for key, spans in runs.items():
            spans.sort()
            for p in list(self._pending[key]):
                code = next_run(p.start, spans)
                if code is not None:
                    self._remove(p)
                    out.append(p.settle(code))
        return out

    # --- outside the lock -------------------------------------------------------------------------
    def _settle_expired(self, expired: list[_Pending]) -> list[Outcome]:
        if not expired:
            return []
        found = self._lookup(expired) if self._store is not None else {}
        return [p.settle(found.get(i)) for i, p in enumerate(expired)]

    def _lookup(self, handoffs: Sequence[_Pending]) -> dict[int, int]:
        """Index → status code of the target's next agent span already in the store (a failed
        query finds nothing: the handoffs stay pending, or settle as unknown)."""
        assert self._store is not None
        try:
            rows = self._query(handoffs)
        except Exception:  # /metrics must never stop ingest or a scrape
            log.exception("handoff target lookup failed")
            return {}
        return {int(i): int(code) for i, code in rows}

    def _query(self, handoffs: Sequence[_Pending]) -> list[tuple[int, int]]:
        """(index, status code) of each handoff whose target has run: the targets' agent spans of
        those traces read plainly (every such span ends after the earliest handoff start, so the
        store skips older rows), the next run picked by the rule's own ``next_run``."""
        assert self._store is not None
        traces = sorted({p.trace for p in handoffs})
        runs: dict[tuple[str, str], list[tuple[int, str, int]]] = {}
        since = min(p.start for p in handoffs)
        found = rows_of_traces(
            self._store, _AGENT_COLUMNS, traces, ended_since_ns=since, operation=sc.OP_AGENT
        )
        for trace, agent, start, span_id, code in found:
            runs.setdefault((trace, agent), []).append((int(start), span_id, int(code)))
        for spans in runs.values():
            spans.sort()
        out = []
        for i, p in enumerate(handoffs):
            code = next_run(p.start, runs.get((p.trace, p.target), []))
            if code is not None:
                out.append((i, code))
        return out


def _transitions(attributes: str | None) -> Any:
    try:
        return json.loads(attributes or "{}").get(sc.REACH_HANDOFF_TRANSITIONS)
    except (ValueError, AttributeError):
        return None

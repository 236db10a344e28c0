"""Counts each handoff once, with its final outcome (SPEC §11), for ``reach_handoffs_total``.

A Prometheus counter must only grow, but an inferred outcome depends on a span that may arrive
after the handoff (often in the same batch, sometimes later, on a multi-collector setup even at
another collector). So a handoff is counted when its outcome is known, never before:

- a recorded outcome at once, when its batch is committed;
- an inferred one as soon as the target's next agent span is in the store: looked up once when the
  handoff is committed (the target may have ended first, or in the same batch), then matched
  against every later committed batch from a bounded in-memory map keyed by (trace, target)
  (``pending.PendingSpans``: the lookup runs on the lookup worker, off the writer thread, and the
  handoff stays matchable while it runs; whichever finds the target first counts it, once);
- a handoff still pending after ``timeout_s`` is looked up in the store one last time (another
  collector may have stored the target's span) and otherwise counted ``unknown``, inferred; past
  ``max_pending`` the oldest are settled the same way without the lookup.

Counting from the store at scrape instead would make the counter fall when retention drops spans
and cost a scan per scrape; this costs one small, time-bounded query per committed batch that has
handoffs without a recorded outcome, never on the acknowledgement path. The only disagreement
with ``/api/metrics/agents`` is by design: a target span arriving after the timeout, or a
later-starting run of the target that ends before an earlier-starting one (spans arrive in end
order) — the first one seen decides.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

from reach_collector.exposition.pending import Awaiting, Waiter
from reach_collector.query.handoff_outcome import NO_OUTCOME, from_target, is_recorded, next_run
from reach_collector.query.trace_rows import rows_of_traces
from reach_collector.store.base import TraceStore
from reach_otel import handoff_state as hf
from reach_otel import semconv as sc

__all__ = ["HandoffCounts", "Outcome"]

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


class _Pending(Waiter):
    __slots__ = ("mode", "seconds", "source", "start", "target", "trace")

    def __init__(
        self, trace: str, target: str, start: int, source: str | None, mode: str | None, seconds: float
    ) -> None:
        super().__init__((trace, target))
        self.trace, self.target, self.start, self.source, self.mode = trace, target, start, source, mode
        self.seconds = seconds

    def settle(self, code: int | None) -> Outcome:
        return (self.source, self.target, from_target(code), self.mode, True, self.seconds)


class HandoffCounts(Awaiting[_Pending, Outcome]):
    """Handoffs without a recorded outcome, each waiting for its target's next run (``Awaiting``)."""

    what = "handoff target"

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
        waits = self._waits
        # A fresh handoff's target may have run in an earlier batch, so the store (which holds this
        # batch too) decides first: it waits for later batches only, from its own lookup on.
        looked = bool(fresh) and waits.store is not None
        with waits.lock:
            now = self._clock()
            if not looked:
                for p in fresh:
                    waits.add(p, now)
            if waits.live:
                out.extend(self._match(table, op))
            if looked:
                for p in fresh:
                    waits.add(p, now)
            out.extend(p.settle(None) for p in waits.take_overflow())
            expired = waits.take_expired(now)
        if looked:
            waits.look_up(fresh, self._found)  # dropped when full: they wait as if nothing was found
        out.extend(waits.settle_expired(expired, _Pending.settle))
        out.extend(waits.settled())
        return out

    def expire(self, wait_s: float = 0.0) -> list[Outcome]:
        """Handoffs pending past the timeout, settled (called at scrape, so idle collectors settle
        too), and what lookups have settled since the last call (``PendingSpans.expire``)."""
        return self._waits.expire(self._clock(), _Pending.settle, wait_s)

    # --- under the lock ---------------------------------------------------------------------------
    def _found(self, handoffs: list[_Pending], codes: dict[int, Any]) -> list[Outcome]:
        """A fresh lookup's answer: the handoffs whose target had run, unless a batch settled them."""
        return [
            self._waits.take(p).settle(codes[i]) for i, p in enumerate(handoffs) if i in codes and not p.done
        ]

    def _match(self, table: pa.Table, op: pa.ChunkedArray) -> list[Outcome]:
        """Pending handoffs whose target ran in this batch (the earliest run after each decides)."""
        mask = pc.equal(op, sc.OP_AGENT)
        if not pc.any(mask).as_py():
            return []
        waiting = self._waits.waiting
        runs: dict[tuple[str, str], list[tuple[int, str, int]]] = {}
        agents = table.filter(mask).select(list(_AGENT_COLUMNS))
        for trace, agent, start, span_id, code in zip(*(c.to_pylist() for c in agents.columns), strict=True):
            if (trace, agent) in waiting:
                runs.setdefault((trace, agent), []).append((start, span_id, code))
        out: list[Outcome] = []
        for key, spans in runs.items():
            spans.sort()
            for p in list(waiting[key]):
                code = next_run(p.start, spans)
                if code is not None:
                    out.append(self._waits.take(p).settle(code))
        return out

    # --- on the lookup worker -------------------------------------------------------------------
    def _query(self, store: TraceStore, handoffs: Sequence[_Pending]) -> dict[int, Any]:
        """Index → status code of each handoff whose target has run: the targets' agent spans of those
        traces read plainly (every such span ends after the earliest handoff start, so the store skips
        older rows), the next run picked by the rule's own ``next_run``."""
        traces = sorted({p.trace for p in handoffs})
        runs: dict[tuple[str, str], list[tuple[int, str, int]]] = {}
        since = min(p.start for p in handoffs)
        found = rows_of_traces(store, _AGENT_COLUMNS, traces, ended_since_ns=since, operation=sc.OP_AGENT)
        for trace, agent, start, span_id, code in found:
            runs.setdefault((trace, agent), []).append((int(start), span_id, int(code)))
        for spans in runs.values():
            spans.sort()
        out = {}
        for i, p in enumerate(handoffs):
            code = next_run(p.start, runs.get((p.trace, p.target), []))
            if code is not None:
                out[i] = int(code)
        return out


def _transitions(attributes: str | None) -> Any:
    try:
        return json.loads(attributes or "{}").get(sc.REACH_HANDOFF_TRANSITIONS)
    except (ValueError, AttributeError):
        return None

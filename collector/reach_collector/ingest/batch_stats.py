"""What the Prometheus exposition needs from a batch of spans, folded in while the rows are built.

The decoding worker adds each row as it makes it (a few dict updates per span), so the writer only
merges a handful of small dicts per commit instead of re-reading the batch. Labels here are raw
(unbounded); the exposition bounds them when it merges. Pure and picklable.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from reach_collector.store.schema import SPAN_NAMES
from reach_otel import semconv as sc

# gen_ai.client.operation.duration advisory boundaries (GenAI semantic conventions), seconds.
DURATION_BUCKETS: Final = (
    0.01,
    0.02,
    0.04,
    0.08,
    0.16,
    0.32,
    0.64,
    1.28,
    2.56,
    5.12,
    10.24,
    20.48,
    40.96,
    81.92,
)
_LLM: Final = frozenset(sc.LLM_OPERATIONS)
_COL: Final = {name: i for i, name in enumerate(SPAN_NAMES)}
(_TID, _PARENT, _NAME, _END, _DUR, _STATUS, _OP, _AGENT, _MODEL, _IN, _OUT) = (
    _COL[c]
    for c in (
        "trace_id",
        "parent_span_id",
        "name",
        "end_ns",
        "duration_ms",
        "status_code",
        "operation",
        "agent",
        "model",
        "input_tokens",
        "output_tokens",
    )
)
_HANDOFF: Final = tuple(
    _COL[c] for c in ("handoff_source", "handoff_target", "handoff_status", "handoff_mode", "loop_detected")
)
_ATTRS: Final = _COL["attributes"]


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def add_sat(a: int, b: int) -> int:
    """``a + b`` held to the int64 range, as the compiled fold adds token counts (the sums feed
    int64 counters; a huge count must not wrap round to a negative one)."""
    return min(max(a + b, _INT64_MIN), _INT64_MAX)


@dataclass
class BatchStats:
    # (agent, operation, is_error, duration bucket) → [count, sum of seconds]
    calls: dict[tuple[Any, str, bool, int], list[float]] = field(default_factory=dict)
    # (agent, model) → [input tokens, output tokens]
    tokens: dict[tuple[Any, Any], list[int]] = field(default_factory=dict)
    # (source, target, status, mode, loop_detected) → handoff spans
    handoffs: dict[tuple[Any, Any, Any, Any, Any], int] = field(default_factory=dict)
    # trace_id → [handoff spans, agent spans, root seen] (the hop histogram)
    traces: dict[str, list[int]] = field(default_factory=dict)
    # heartbeat spans: (attributes JSON, end_ns)
    beats: list[tuple[str, int]] = field(default_factory=list)

    def add(self, row: Sequence[Any]) -> None:
        """Fold one span row (``store.schema`` column order) in."""
        op = row[_OP]
        is_root = row[_PARENT] is None
        if op is not None:
            if op == sc.OP_HANDOFF:
                key = tuple(row[i] for i in _HANDOFF)
                self.handoffs[key] = self.handoffs.get(key, 0) + 1
            else:
                seconds = row[_DUR] / 1000.0
                ckey = (row[_AGENT], op, row[_STATUS] == 2, bisect_left(DURATION_BUCKETS, seconds))
                call = self.calls.get(ckey)
                if call is None:
                    self.calls[ckey] = [1, seconds]
                else:
                    call[0] += 1
                    call[1] += seconds
                if op in _LLM:
                    tin, tout = row[_IN], row[_OUT]
                    tkey = (row[_AGENT], row[_MODEL])
                    tok = self.tokens.get(tkey)
                    if tok is None:
                        tok = self.tokens[tkey] = [0, 0]
                    if tin is not None:
                        tok[0] = add_sat(tok[0], tin)
                    if tout is not None:
                        tok[1] = add_sat(tok[1], tout)
        if op == sc.OP_HANDOFF or op == sc.OP_AGENT or is_root:
            state = self.traces.get(row[_TID])
            if state is None:
                state = self.traces[row[_TID]] = [0, 0, 0]
            if op == sc.OP_HANDOFF:
                state[0] += 1
            elif op == sc.OP_AGENT:
                state[1] += 1
            if is_root:
                state[2] = 1
        if row[_NAME] == sc.HEARTBEAT_SPAN_NAME:
            self.beats.append((row[_ATTRS], row[_END]))

    def merge(self, other: BatchStats) -> None:
        """Add ``other`` — more spans of the same request — into this one."""
        for ckey, (n, total) in other.calls.items():
            call = self.calls.setdefault(ckey, [0, 0.0])
            call[0] += n
            call[1] += total
        for tkey, (tin, tout) in other.tokens.items():
            tok = self.tokens.setdefault(tkey, [0, 0])
            tok[0] = add_sat(tok[0], tin)
            tok[1] = add_sat(tok[1], tout)
        for hkey, n in other.handoffs.items():
            self.handoffs[hkey] = self.handoffs.get(hkey, 0) + n
        for tid, (handoffs, agents, root) in other.traces.items():
            state = self.traces.setdefault(tid, [0, 0, 0])
            state[0] += handoffs
            state[1] += agents
            state[2] |= root
        self.beats.extend(other.beats)


def stats_of(rows: Iterable[Sequence[Any]]) -> BatchStats:
    stats = BatchStats()
    for row in rows:
        stats.add(row)
    return stats

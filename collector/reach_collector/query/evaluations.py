"""Evaluations joined to their spans (SPEC §18), at read time so a span that arrives after its
evaluation is found: by the evaluation's trace and span id; else by ``gen_ai.response.id`` (an LLM
span of that response); else — feedback that names only a trace — the trace's root span. An
evaluation belongs to the agent of that span, or of its nearest agent ancestor (``owners``).

``for_trace`` gives the trace view its evaluations with one bounded query; ``quality`` is
``GET /api/metrics/quality``; ``owners_of`` is what ``/metrics`` labels evaluations with. The SQL
is written once for both stores (``store.dialect``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from reach_collector.query.owners import WALK_COLUMNS, Key, spans_table, walk_up
from reach_collector.query.views import iso, load_json
from reach_collector.store.base import TraceStore
from reach_collector.store.dialect import dialect_of
from reach_collector.store.span_rows import SpanRows
from reach_otel import semconv as sc

__all__ = [
    "BY_VALUES",
    "LOOKBACK_NS",
    "MAX_PER_TRACE",
    "Evaluated",
    "for_trace",
    "owners_of",
    "quality",
]

BY_VALUES: Final = ("agent", "evaluation", "model")
# How long before an evaluation its span may have ended and still be found (an LLM judge runs
# minutes after the answer, a user's feedback hours): bounds every span lookup in time.
LOOKBACK_NS: Final = 86_400 * 1_000_000_000
MAX_PER_TRACE: Final = 10_000  # evaluations the trace view shows per trace
_CHUNK: Final = 1000  # ids bound in one IN list
_LLM: Final = tuple(sc.LLM_OPERATIONS)
Subquery = tuple[str, Sequence[Any]]  # SQL selecting trace ids, and its parameters
_EVAL_COLUMNS: Final = "trace_id, span_id, response_id, name, score, label, explanation, time_ns, source"


class Evaluated(NamedTuple):
    """Where an evaluation landed: its span (None when not found) and that span's owner and model."""

    span: Key | None
    agent: str | None
    model: str | None


def _chunks(values: Sequence[str]) -> Iterable[Sequence[str]]:
    for at in range(0, len(values), _CHUNK):
        yield values[at : at + _CHUNK]


def _marks(n: int) -> str:
    return ", ".join("?" * n)


def _by_response(store: TraceStore, response_ids: Sequence[str], since_ns: int) -> dict[str, Key]:
    """Response id → the (trace, span) of the LLM span that produced it (the earliest one)."""
    if not response_ids:
        return {}
    attr, attr_params = dialect_of(store).attr("attributes", sc.GEN_AI_RESPONSE_ID)
    found: dict[str, tuple[int, Key]] = {}
    for chunk in _chunks(sorted(response_ids)):
        sql = (
            f"SELECT trace_id, span_id, start_ns, {attr} AS rid FROM spans WHERE end_ns >= ? "
            f"AND operation IN ({_marks(len(_LLM))}) AND {attr} IN ({_marks(len(chunk))})"
        )
        params = [*attr_params, since_ns, *_LLM, *attr_params, *chunk]
        for trace_id, span_id, start_ns, rid in store.query(sql, params):
            if rid not in found or (start_ns, (trace_id, span_id)) < found[rid]:
                found[rid] = (start_ns, (trace_id, span_id))
    return {rid: key for rid, (_, key) in found.items()}


def _walk_rows(
    store: TraceStore, trace_ids: Sequence[str], since_ns: int, source: Subquery | None = None
) -> list[tuple[Any, ...]]:
    """Every span of these traces (or of those ``source`` selects, in one scan) that ended after
    ``since_ns``: the walk's columns, model, start."""
    columns = f"SELECT {', '.join(WALK_COLUMNS)}, model, start_ns FROM spans WHERE end_ns >= ?"
    if source is not None:
        since = _first_start(store, source[0], source[1], since_ns)
        return store.query(f"{columns} AND trace_id IN ({source[0]})", [since, *source[1]])
    rows: list[tuple[Any, ...]] = []
    for chunk in _chunks(sorted(trace_ids)):
        since = _first_start(store, _marks(len(chunk)), chunk, since_ns)
        rows += store.query(f"{columns} AND trace_id IN ({_marks(len(chunk))})", [since, *chunk])
    return rows


def _first_start(store: TraceStore, among: str, params: Sequence[Any], since_ns: int) -> int:
    """The earliest start of the traces ``among`` selects, from the trace lookup (no span of them
    ends before it), or ``since_ns`` when that is later: it bounds the span scan by their own
    time, not by the whole lookback."""
    found = store.query(
        f"SELECT min(first_start_ns) FROM {store.trace_bounds} WHERE trace_id IN ({among})", list(params)
    )
    first = found[0][0] if found else None
    return since_ns if first is None else max(since_ns, int(first))


class _Spans:
    """The spans read for a walk, indexed: each span's model, each trace's root."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.models: dict[Key, str | None] = {}
        self.roots: dict[str, tuple[int, str]] = {}
        self.traces: set[str] = set()

    def add(self, rows: Sequence[tuple[Any, ...]]) -> None:
        self.rows += rows
        for trace_id, span_id, parent, _op, _agent, model, start_ns in rows:
            self.models[(trace_id, span_id)] = model
            self.traces.add(trace_id)
            if parent is None and (trace_id not in self.roots or (start_ns, span_id) < self.roots[trace_id]):
                self.roots[trace_id] = (start_ns, span_id)


def owners_of(
    store: TraceStore,
    evaluations: Sequence[tuple[str | None, str | None, str | None]],
    since_ns: int,
    source: Subquery | None = None,
) -> list[Evaluated]:
    """For each ``(trace_id, span_id, response_id)``: the span it evaluates among the spans that
    ended after ``since_ns``, and that span's agent (its own, else its nearest agent ancestor's)
    and model. ``source``: an SQL subquery (and its parameters) selecting the evaluations' trace
    ids, read in one scan instead of as lists of ids. Response ids are looked up only for the
    evaluations their ids do not place."""
    spans = _Spans()
    spans.add(_walk_rows(store, sorted({t for t, _, _ in evaluations if t}), since_ns, source))
    keys: list[Key | None] = [
        (t, s) if t and s and (t, s) in spans.models else None for t, s, _ in evaluations
    ]
    wanted = sorted({r for key, (_, _, r) in zip(keys, evaluations, strict=True) if key is None and r})
    responses = _by_response(store, wanted, since_ns)
    more = sorted({key[0] for key in responses.values()} - spans.traces)
    if more:
        spans.add(_walk_rows(store, more, since_ns))
    for i, (trace_id, span_id, response_id) in enumerate(evaluations):
        if keys[i] is not None:
            continue
        if response_id and response_id in responses and responses[response_id] in spans.models:
            keys[i] = responses[response_id]
        elif trace_id and not span_id and trace_id in spans.roots:
            keys[i] = (trace_id, spans.roots[trace_id][1])
    starts = [key for key in keys if key is not None]
    walked = iter(walk_up(spans_table([r[: len(WALK_COLUMNS)] for r in spans.rows]), starts))
    out: list[Evaluated] = []
    for key in keys:
        if key is None:
            out.append(Evaluated(None, None, None))
            continue
        owner, _ = next(walked)
        out.append(Evaluated(key, owner, spans.models.get(key)))
    return out


def _response_ids(rows: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Response id → span id of the trace's LLM spans that carry one."""
    if isinstance(rows, SpanRows):
        table = rows.table.select(["span_id", "operation", "attributes"])
        picked: Iterable[Mapping[str, Any]] = table.filter(
            pc.is_in(table.column("operation"), value_set=pa.array(_LLM, pa.string()))
        ).to_pylist()
    else:
        picked = (r for r in rows if r["operation"] in _LLM)
    out: dict[str, str] = {}
    for row in picked:
        rid = load_json(row["attributes"], {}).get(sc.GEN_AI_RESPONSE_ID)
        if isinstance(rid, str) and rid and rid not in out:
            out[rid] = row["span_id"]
    return out


def _view(
    name: str,
    score: float | None,
    label: str | None,
    explanation: str | None,
    time_ns: int,
    source: str | None,
) -> dict[str, Any]:
    return {
        "name": name,
        "score": score if score is None or math.isfinite(score) else None,
        "label": label,
        "explanation": explanation,
        "time": iso(time_ns),
        "time_unix_nano": int(time_ns),
        "source": source,
    }


def for_trace(
    store: TraceStore, trace_id: str, rows: Sequence[Mapping[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """Span id → its evaluations (oldest first) for the trace view: one query, bounded by
    ``MAX_PER_TRACE``, for those naming this trace or the response id of one of its LLM spans."""
    responses = _response_ids(rows)
    where, params = "trace_id = ?", [trace_id]
    ids = sorted(responses)[:_CHUNK]
    if ids:
        where += f" OR response_id IN ({_marks(len(ids))})"
        params += ids
    found = store.query(
        f"SELECT {_EVAL_COLUMNS} FROM evaluations WHERE {where} ORDER BY time_ns, name LIMIT {MAX_PER_TRACE}",
        params,
    )
    if not found:
        return {}
    if isinstance(rows, SpanRows):
        span_ids = set(rows.table.column("span_id").to_pylist())
        root = _root(rows.table.select(["span_id", "parent_span_id", "start_ns"]).to_pylist())
    else:
        span_ids = {r["span_id"] for r in rows}
        root = _root(rows)
    out: dict[str, list[dict[str, Any]]] = {}
    for tid, sid, rid, name, score, label, explanation, time_ns, source in found:
        if tid == trace_id and sid in span_ids:
            target = sid
        elif rid in responses:
            target = responses[rid]
        elif tid == trace_id and not sid and root is not None:
            target = root
        else:
            continue  # its span is not (yet) stored: shown once it is
        out.setdefault(target, []).append(_view(name, score, label, explanation, time_ns, source))
    return out


def _root(rows: Iterable[Mapping[str, Any]]) -> str | None:
    best: tuple[int, str] | None = None
    for r in rows:
        if r["parent_span_id"] is None and (best is None or (r["start_ns"], r["span_id"]) < best):
            best = (r["start_ns"], r["span_id"])
    return best[1] if best else None


def quality(store: TraceStore, now_ns: int, window_s: float, by: str = "agent") -> dict[str, Any]:
    """``GET /api/metrics/quality``: the evaluations made in the window ending at ``now_ns``,
    grouped ``by`` agent (their span's owner), evaluation name or model (their span's request
    model): count, mean score (of those with one; null when none has) and label counts. An
    evaluation whose span is not found is grouped under a null agent or model."""
    if by not in BY_VALUES:
        raise ValueError(f"by must be one of {', '.join(BY_VALUES)}; got {by[:40]!r}")
    lo = now_ns - int(window_s * 1_000_000_000)
    window = "FROM evaluations WHERE time_ns > ? AND time_ns <= ?"
    found = store.query(
        f"SELECT trace_id, span_id, response_id, name, score, label {window} ORDER BY time_ns", [lo, now_ns]
    )
    if by == "evaluation":
        keys: list[str | None] = [row[3] for row in found]
    else:
        traces = (f"SELECT trace_id {window} AND trace_id IS NOT NULL", [lo, now_ns])
        landed = owners_of(store, [(t, s, r) for t, s, r, *_ in found], lo - LOOKBACK_NS, traces)
        keys = [e.agent if by == "agent" else e.model for e in landed]
    groups: dict[str | None, list[Any]] = {}
    for key, (*_, score, label) in zip(keys, found, strict=True):
        group = groups.setdefault(key, [0, 0.0, 0, {}])
        group[0] += 1
        if score is not None and math.isfinite(score):
            group[1] += float(score)
            group[2] += 1
        if label is not None:
            group[3][label] = group[3].get(label, 0) + 1
    return {
        "window_s": window_s,
        "until": iso(now_ns),
        "by": by,
        "groups": [
            {
                "key": key,
                "evaluations": n,
                "mean_score": total / scored if scored else None,
                "labels": dict(sorted(labels.items())),
            }
            for key, (n, total, scored, labels) in sorted(
                groups.items(), key=lambda kv: (kv[0] is None, kv[0] or "")
            )
        ],
    }

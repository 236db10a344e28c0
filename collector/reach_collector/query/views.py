"""Pure shaping of stored rows into the §9 JSON: span objects, the nested tree, trace summaries.

The span tree has one builder, span_tree: the nested ``roots`` and each span's place in that tree
(``tree_order``, its line in the tree walked depth first, and ``tree_depth``) both come from it, so
the console (which asks for the spans alone), the CLI and the MCP tools draw the same tree.

A handoff span also carries ``handoff``: its one outcome (SPEC §11, ``handoff_outcome``) with
``inferred`` saying whether it came from the target's next agent span in the trace.

``trace_body`` is what the API sends: the bytes of ``dumps(trace_json(...))`` (the reference, which
the tests hold it to); for a large trace built a column at a time (trace_columns), not a dict per span.
"""

from __future__ import annotations

import json
import operator
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson
import pyarrow as pa

from reach_collector.query.handoff_outcome import from_target, is_recorded, next_run
from reach_collector.query.trace_columns import (
    KIND_NAMES,
    STATUS_NAMES,
    encode_spans,
    finite,
    joined,
    rows_where,
    span_table,
)
from reach_collector.store import span_rows
from reach_otel import semconv as sc

# Deeper chains are attached at this depth, so a hostile parent chain cannot blow the JSON encoder.
MAX_TREE_DEPTH: Final = 128
# What agent_runs and handoff_json read of a row.
_HANDOFF_COLUMNS: Final = (
    "span_id",
    "operation",
    "agent",
    "start_ns",
    "status_code",
    "attributes",
    "handoff_source",
    "handoff_target",
    "handoff_status",
    "handoff_mode",
)


def iso(ns: int) -> str:
    """Unix nanoseconds → UTC ISO-8601 with microseconds (left out when zero, as
    ``datetime.isoformat`` does) and a Z."""
    seconds, rem = divmod(int(ns), 1_000_000_000)
    micros = rem // 1000
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{stamp}.{micros:06d}Z" if micros else f"{stamp}Z"


def _load(text: str | None, empty: Any) -> Any:
    """A stored JSON column's value (``empty`` when there is none), read as the trace view reads it."""
    if not text:
        return empty
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:  # NaN, Infinity, integers beyond 64 bits: the stdlib takes them
        return json.loads(text)


load_json = _load  # the public name (query.cause reads handoff attributes and events with it)


def dumps(value: Any) -> bytes:
    """JSON bytes of a view, in one pass (orjson); what orjson refuses (integers beyond 64 bits,
    very deep nesting) goes through the stdlib encoder instead."""
    try:
        return orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        # NaN as null, as orjson writes it: the stdlib would write NaN, which is not JSON.
        return json.dumps(finite(value), ensure_ascii=False, separators=(",", ":")).encode()


def span_json(row: Mapping[str, Any]) -> dict[str, Any]:
    scope = _load(row["scope"], None)
    return {
        "trace_id": row["trace_id"],
        "span_id": row["span_id"],
        "parent_span_id": row["parent_span_id"],
        "name": row["name"],
        "kind": KIND_NAMES[row["kind"]] if 0 <= row["kind"] < len(KIND_NAMES) else "INTERNAL",
        "service": row["service"],
        "start_time_unix_nano": row["start_ns"],
        "end_time_unix_nano": row["end_ns"],
        "start_time": iso(row["start_ns"]),
        "end_time": iso(row["end_ns"]),
        "duration_ms": row["duration_ms"],
        "status": {
            "code": STATUS_NAMES[row["status_code"]] if row["status_code"] < 3 else "UNSET",
            "message": row["status_message"] or "",
        },
        "attributes": _load(row["attributes"], {}),
        "events": _load(row["events"], []),
        "links": _load(row["links"], []),
        "resource": _load(row["resource"], {}),
        "scope": scope,
        "trace_state": row["trace_state"] or "",
        "flags": row["flags"],
        "agent": row["agent"],
        "operation": row["operation"],
        # As the metrics read them, whichever convention the span was written in (OpenInference's
        # llm.token_count.*, OpenLLMetry's, the GenAI conventions'): what the console shows.
        "model": row["model"],
        "input_tokens": row["input_tokens"],
        "output_tokens": row["output_tokens"],
    }


def trace_json(
    trace_id: str,
    rows: Iterable[Mapping[str, Any]],
    *,
    tree: bool = True,
    evaluations: Mapping[str, list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """The full trace: spans ordered by start time (duplicates from exporter retries dropped), each
    with its place in the span tree (``tree_order``, ``tree_depth``: span_tree) and, unless ``tree``
    is false, the nested ``roots`` tree that repeats every span. A dict per span:
    the reference that trace_body's bytes are held to. A span evaluated (``evaluations``: span id
    → its evaluations, query.evaluations) carries ``evaluations``, as a handoff span ``handoff``."""
    seen: set[str] = set()
    spans: list[dict[str, Any]] = []
    kept: list[Mapping[str, Any]] = []
    for row in rows:
        if row["span_id"] in seen:
            continue
        seen.add(row["span_id"])
        kept.append(row)
        spans.append(span_json(row))
    runs = agent_runs(kept)
    placed = tree_of(spans)
    for i, (row, span) in enumerate(zip(kept, spans, strict=True)):
        if row["operation"] == sc.OP_HANDOFF:
            span["handoff"] = handoff_json(row, runs)
        if evaluations and row["span_id"] in evaluations:
            span["evaluations"] = evaluations[row["span_id"]]
        span["tree_order"] = placed.order[i]
        span["tree_depth"] = placed.depth[i]
    out: dict[str, Any] = {"trace_id": trace_id, "span_count": len(spans), "spans": spans}
    if tree:
        out["roots"] = placed.nest(spans)
    return out


def trace_body(
    trace_id: str,
    rows: Sequence[Mapping[str, Any]],
    *,
    tree: bool = True,
    evaluations: Mapping[str, list[dict[str, Any]]] | None = None,
) -> bytes:
    """The JSON bytes of ``trace_json(trace_id, rows, tree=tree)``, spans encoded a column at a time
    with the stored JSON text spliced in (trace_columns); the nested tree, when asked for, splices
    the same span texts in span_tree's order, each with its ``children``. A small trace is
    shaped as dicts (span_rows.COLUMNS_FROM): that costs less there."""
    if len(rows) < span_rows.COLUMNS_FROM:
        return dumps(trace_json(trace_id, rows, tree=tree, evaluations=evaluations))
    try:
        table = span_table(rows)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # row dicts whose values the schema's types refuse
        return dumps(trace_json(trace_id, rows, tree=tree, evaluations=evaluations))
    few = rows_where(table, "operation", (sc.OP_AGENT, sc.OP_HANDOFF), _HANDOFF_COLUMNS)
    runs = agent_runs(row for _, row in few)
    tails = {
        index: ',"handoff":' + orjson.dumps(handoff_json(row, runs)).decode()
        for index, row in few
        if row["operation"] == sc.OP_HANDOFF
    }
    if evaluations:
        for index, span_id in enumerate(table.column("span_id").to_pylist()):
            if span_id in evaluations:
                tail = ',"evaluations":' + orjson.dumps(evaluations[span_id]).decode()
                tails[index] = tails.get(index, "") + tail
    placed = span_tree(
        table.column("span_id").to_pylist(),
        table.column("parent_span_id").to_pylist(),
        table.column("start_ns").to_pylist(),
    )
    ends = [f',"tree_order":{k},"tree_depth":{d}' for k, d in zip(placed.order, placed.depth, strict=True)]
    for index, tail in tails.items():
        ends[index] = tail + ends[index]
    texts = encode_spans(table, dict(enumerate(ends)))
    count: int = table.num_rows
    head = b'{"trace_id":%b,"span_count":%d,"spans":[%b]' % (orjson.dumps(trace_id), count, joined(texts))
    if not tree:
        return head + b"}"
    return head + b',"roots":[' + placed.nested_text(texts.to_pylist()).encode() + b"]}"


def agent_runs(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[tuple[int, str, int]]]:
    """Agent → its runs in the trace, sorted: ``(start_ns, span_id, status_code)`` (handoff_json)."""
    runs: dict[str, list[tuple[int, str, int]]] = {}
    for r in rows:
        if r["operation"] == sc.OP_AGENT and r["agent"] is not None:
            runs.setdefault(r["agent"], []).append((r["start_ns"], r["span_id"], r["status_code"]))
    for found in runs.values():
        found.sort()
    return runs


def handoff_json(row: Mapping[str, Any], runs: dict[str, list[tuple[int, str, int]]]) -> dict[str, Any]:
    """A handoff row's source, target, mode and its one outcome, given the trace's agent runs
    (agent → sorted ``(start_ns, span_id, status_code)``)."""
    attributes = _load(row["attributes"], {})
    transitions = attributes.get(sc.REACH_HANDOFF_TRANSITIONS) if isinstance(attributes, dict) else None
    target, status = row["handoff_target"], row["handoff_status"]
    inferred = not is_recorded(status, transitions)
    if inferred:
        status = from_target(next_run(row["start_ns"], runs.get(target, ())) if target else None)
    return {
        "source": row["handoff_source"],
        "target": target,
        "mode": row["handoff_mode"],
        "status": status,
        "inferred": inferred,
    }


@dataclass(frozen=True, slots=True)
class SpanTree:
    """Spans (by their index in the trace's span list) placed in the tree: ``roots`` (orphans in
    span order, then spans on a parent cycle), each span's ``children`` in start order, and each
    span's line in the tree walked depth first (``order``) and its depth there (``depth``)."""

    roots: list[int]
    children: list[list[int]]
    order: list[int]
    depth: list[int]

    def preorder(self) -> list[int]:
        """The span indexes in the tree's depth-first order (``order`` inverted)."""
        out = [0] * len(self.order)
        for i, k in enumerate(self.order):
            out[k] = i
        return out

    def nest(self, spans: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The nested ``roots``: each span a copy of its dict with its ``children`` nested."""
        nodes = [{**s, "children": []} for s in spans]
        for node, kids in zip(nodes, self.children, strict=True):
            node["children"] = [nodes[c] for c in kids]
        return [nodes[r] for r in self.roots]

    def nested_text(self, texts: Sequence[str]) -> str:
        """The nested ``roots`` as JSON text from each span's own JSON object text: every span's
        text (less its closing brace) followed by its ``children``, in one pass over the tree."""
        parts: list[str] = []
        before = -1  # the depth of the span written last
        for i in self.preorder():
            depth = self.depth[i]
            if depth <= before:  # the spans written since the last ancestor of this one are closed
                parts.append("]}" * (before - depth + 1) + ",")
            parts.append(texts[i][:-1])
            parts.append(',"children":[')
            before = depth
        parts.append("]}" * (before + 1))
        return "".join(parts)


def span_tree(ids: Sequence[str], parents: Sequence[str | None], starts: Sequence[int]) -> SpanTree:
    """The trace's one tree builder: nest spans under their parents (a span naming itself, or a
    parent not in the trace, is a root; spans on a parent cycle become roots after the others);
    deeper than MAX_TREE_DEPTH, a chain's spans hang at that depth; children in start order (then
    span id). A repeated span id stands for its first span. Iterative: no recursion over depth."""
    n = len(ids)
    first = dict(zip(reversed(ids), range(n - 1, -1, -1), strict=True))  # a repeated id: its first
    get = first.get
    kids: list[list[int]] = [[] for _ in range(n)]  # the spans naming each span as parent
    tops: list[int] = []
    for i, (span_id, parent) in enumerate(zip(ids, parents, strict=True)):
        at = get(parent) if parent is not None and parent != span_id else None
        if at is None:
            tops.append(i)
        else:
            kids[at].append(i)
    # Each span's children are the spans naming it, but for the first span of a parent cycle (a
    # root, not a child) and for spans past the depth cap (their children go to the span at the
    # cap, their holder). Walked depth first, each span's line and depth are written as it is met.
    children = kids
    placed = bytearray(n)
    roots: list[int] = []
    order = [0] * n
    depth = [0] * n
    line = 0
    gathered = False  # whether a holder was given the children of spans past the cap

    def attach(root: int, cycle: bool) -> None:
        nonlocal line, gathered
        roots.append(root)
        stack = [(root, root, 0)]  # (span, the span that receives its children, depth)
        while stack:
            at, holder, d = stack.pop()
            placed[at] = 1
            order[at] = line
            depth[at] = d if d < MAX_TREE_DEPTH else MAX_TREE_DEPTH
            line += 1
            below = children[at]
            if not below:
                continue
            if cycle and root in below:  # the cycle come round to its first span
                below.remove(root)
            target = at
            if d >= MAX_TREE_DEPTH:
                target = holder
                children[holder].extend(below)
                children[at] = []
                gathered = True
            stack.extend([(c, target, d + 1) for c in reversed(below)])

    for root in tops:
        attach(root, False)
    # Spans on a parent cycle were never reached from a root: show them as roots.
    for i in range(n):
        if not placed[i]:
            attach(i, True)
    # Spans read in start order (as the store reads them) have their children in start order
    # already, unless the depth cap gathered several spans' children into one list.
    keys = list(zip(starts, ids, strict=True))
    if not gathered and all(map(operator.le, keys, keys[1:])):
        return SpanTree(roots, children, order, depth)
    for kids_of in children:
        if len(kids_of) > 1:
            kids_of.sort(key=keys.__getitem__)
    line = 0
    walk = [(r, 0) for r in reversed(roots)]
    while walk:
        at, d = walk.pop()
        order[at] = line
        depth[at] = d
        line += 1
        below = children[at]
        if below:
            walk.extend([(c, d + 1) for c in reversed(below)])
    return SpanTree(roots, children, order, depth)


def tree_of(spans: Sequence[Mapping[str, Any]]) -> SpanTree:
    """span_tree over span objects of the §9 JSON."""
    return span_tree(
        [s["span_id"] for s in spans],
        [s["parent_span_id"] for s in spans],
        [s["start_time_unix_nano"] for s in spans],
    )


def build_tree(spans: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The nested ``roots`` of ``spans`` (span_tree): each span with its ``children``."""
    return tree_of(spans).nest(spans)


def summary_json(row: dict[str, Any]) -> dict[str, Any]:
    start, end = int(row["first_start_ns"]), int(row["last_end_ns"])
    return {
        "trace_id": row["trace_id"],
        "root_name": row["root_name"],
        "start_time_unix_nano": start,
        "start_time": iso(start),
        "duration_ms": (end - start) / 1e6,
        "span_count": int(row["span_count"]),
        "error_count": int(row["error_count"]),
        "agents": sorted(row["agents"] or []),
        "services": sorted(row["services"] or []),
        "hops": int(row["hops"] or 0),
    }

"""Pure shaping of stored rows into the §9 JSON: span objects, the nested tree, trace summaries.

A handoff span also carries ``handoff``: its one outcome (SPEC §11, ``handoff_outcome``) with
``inferred`` saying whether it came from the target's next agent span in the trace.
"""

from __future__ import annotations

import json
import time
from typing import Any, Final

import orjson
from reach_collector.handoff_outcome import from_target, is_recorded, next_run

from reach_otel import semconv as sc

KIND_NAMES: Final = ("INTERNAL", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
STATUS_NAMES: Final = ("UNSET", "OK", "ERROR")
# Deeper chains are attached at this depth, so a hostile parent chain cannot blow the JSON encoder.
MAX_TREE_DEPTH: Final = 128


def iso(ns: int) -> str:
    """Unix nanoseconds → UTC ISO-8601 with microseconds (left out when zero, as
    ``datetime.isoformat`` does) and a Z."""
    seconds, rem = divmod(int(ns), 1_000_000_000)
    micros = rem // 1000
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{stamp}.{micros:06d}Z" if micros else f"{stamp}Z"


def _load(text: str | None, empty: Any) -> Any:
    if not text:
        return empty
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:  # NaN, Infinity, integers beyond 64 bits: the stdlib takes them
        return json.loads(text)


def dumps(value: Any) -> bytes:
    """JSON bytes of a view, in one pass (orjson); what orjson refuses (integers beyond 64 bits,
    very deep nesting) goes through the stdlib encoder instead."""
    try:
        return orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def span_json(row: dict[str, Any]) -> dict[str, Any]:
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
    }


def trace_json(trace_id: str, rows: list[dict[str, Any]], *, tree: bool = True) -> dict[str, Any]:
    """The full trace: spans ordered by start time (duplicates from exporter retries dropped) and,
    unless ``tree`` is false, the nested ``roots`` tree that repeats every span."""
    seen: set[str] = set()
    spans: list[dict[str, Any]] = []
    kept: list[dict[str, Any]] = []
    for row in rows:
        if row["span_id"] in seen:
            continue
        seen.add(row["span_id"])
        kept.append(row)
        spans.append(span_json(row))
    runs: dict[str, list[tuple[int, str, int]]] = {}
    for r in kept:
        if r["operation"] == sc.OP_AGENT and r["agent"] is not None:
            runs.setdefault(r["agent"], []).append((r["start_ns"], r["span_id"], r["status_code"]))
    for agent_runs in runs.values():
        agent_runs.sort()
    for row, span in zip(kept, spans, strict=True):
        if row["operation"] == sc.OP_HANDOFF:
            span["handoff"] = handoff_json(row, runs)
    out: dict[str, Any] = {"trace_id": trace_id, "span_count": len(spans), "spans": spans}
    if tree:
        out["roots"] = build_tree(spans)
    return out


def handoff_json(row: dict[str, Any], runs: dict[str, list[tuple[int, str, int]]]) -> dict[str, Any]:
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


def build_tree(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Nest spans under their parents; orphans and cycle members become roots. Iterative."""
    nodes = {s["span_id"]: {**s, "children": []} for s in spans}
    children: dict[str, list[str]] = {}
    roots: list[str] = []
    for s in spans:
        parent = s["parent_span_id"]
        if parent is not None and parent in nodes and parent != s["span_id"]:
            children.setdefault(parent, []).append(s["span_id"])
        else:
            roots.append(s["span_id"])
    placed: set[str] = set()
    out: list[dict[str, Any]] = []

    def attach(root_id: str) -> None:
        # (node id, the node that receives its children, depth)
        stack = [(root_id, nodes[root_id], 0)]
        placed.add(root_id)
        while stack:
            node_id, holder, depth = stack.pop()
            target = nodes[node_id] if depth < MAX_TREE_DEPTH else holder
            for child_id in children.get(node_id, ()):
                if child_id in placed:
                    continue
                placed.add(child_id)
                target["children"].append(nodes[child_id])
                stack.append((child_id, target, depth + 1))

    for root_id in roots:
        out.append(nodes[root_id])
        attach(root_id)
    # Spans on a parent cycle were never reached from a root: show them as roots.
    for s in spans:
        if s["span_id"] not in placed:
            out.append(nodes[s["span_id"]])
            attach(s["span_id"])
    for node in nodes.values():
        node["children"].sort(key=lambda n: (n["start_time_unix_nano"], n["span_id"]))
    return out


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
        "hops": int(row["hops"] or 0),
    }

"""`GET /api/traces/{trace_id}` and `GET /api/traces?...` (§4, §9, §11)."""

from __future__ import annotations

import re
from typing import Any, Final

from fastapi import APIRouter, HTTPException, Request, Response

from reach_collector.api.numbers import parse_float, parse_int
from reach_collector.query.evaluations import for_trace
from reach_collector.query.views import summary_json, trace_body
from reach_collector.store.base import TraceFilter
from reach_collector.text.times import parse_time_ns

TRACE_ID_RE: Final = re.compile(r"^[0-9a-fA-F]{32}$")
DEFAULT_LIMIT: Final = 20
MAX_LIMIT: Final = 1000
_MAX_ATTR_FILTERS: Final = 16
_KNOWN: Final = frozenset({"service", "agent", "status", "since", "until", "min_duration_ms", "limit"})
_BOOLEANS: Final = {"true": True, "1": True, "false": False, "0": False}

router = APIRouter()


def parse_trace_id(value: str) -> str:
    if not TRACE_ID_RE.match(value) or int(value, 16) == 0:
        raise HTTPException(400, f"malformed trace id {value[:64]!r}: expected 32 hex digits")
    return value.lower()


def parse_tree(value: str | None) -> bool:
    """``tree=false`` leaves the nested ``roots`` out (each span still carries its place in the tree,
    ``tree_order`` and ``tree_depth``: what the console draws)."""
    if value is None:
        return True
    flag = _BOOLEANS.get(value.lower())
    if flag is None:
        raise HTTPException(400, f"tree must be 'true' or 'false', got {value[:40]!r}")
    return flag


@router.get("/api/traces/{trace_id}")
def get_trace(trace_id: str, request: Request) -> Response:
    tid = parse_trace_id(trace_id)
    tree = parse_tree(request.query_params.get("tree"))
    store = request.app.state.store
    rows = store.trace_spans(tid)
    if not rows:
        raise HTTPException(404, f"trace {tid} not found")
    judged = for_trace(store, tid, rows)  # one bounded query (query.evaluations)
    # Encoded a column at a time, straight to bytes (views.trace_body): no dict per span.
    return Response(trace_body(tid, rows, tree=tree, evaluations=judged), media_type="application/json")


def parse_filter(params: list[tuple[str, str]], now_s: float) -> TraceFilter:
    """Query-string items → TraceFilter; raises HTTPException(400) naming the bad parameter."""
    single: dict[str, str] = {}
    attrs: list[tuple[str, str]] = []
    for key, value in params:
        if key.startswith("attr."):
            if len(key) == len("attr.") or len(attrs) >= _MAX_ATTR_FILTERS:
                raise HTTPException(400, f"bad attribute filter {key[:80]!r}")
            attrs.append((key[len("attr.") :], value))
        elif key in _KNOWN:
            single[key] = value
    status = single.get("status")
    if status not in (None, "", "error", "any"):
        raise HTTPException(400, f"status must be 'error' or 'any', got {status[:40]!r}")
    bounds: dict[str, int | None] = {}
    for name in ("since", "until"):
        try:
            bounds[name] = parse_time_ns(single[name], now_s) if single.get(name) else None
        except ValueError as exc:
            raise HTTPException(400, f"{name}: {exc}") from None
    since, until = bounds["since"], bounds["until"]
    min_duration: float | None = None
    limit = DEFAULT_LIMIT
    try:
        if single.get("min_duration_ms"):
            min_duration = parse_float(single["min_duration_ms"], "min_duration_ms", -1e12, 1e12)
        if single.get("limit"):  # clamped below, as §11 says; only its length and form are refused
            limit = parse_int(single["limit"], "limit", -(2**63), 2**63)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None
    return TraceFilter(
        service=single.get("service") or None,
        agent=single.get("agent") or None,
        errors_only=status == "error",
        since_ns=since,
        until_ns=until,
        min_duration_ms=min_duration,
        attributes=tuple(attrs),
        limit=max(1, min(limit, MAX_LIMIT)),
    )


@router.get("/api/traces")
def search_traces(request: Request) -> dict[str, Any]:
    f = parse_filter(request.query_params.multi_items(), request.app.state.clock())
    return {"traces": [summary_json(row) for row in request.app.state.store.search(f)]}

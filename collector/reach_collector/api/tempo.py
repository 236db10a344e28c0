"""A Tempo-compatible query API under ``/tempo``, so Grafana's Tempo data source (URL
``http://collector:4318/tempo``) shows reach-otel traces in its own trace view, with no Tempo.

Trace by id answers protobuf when asked (Grafana sends ``Accept: application/protobuf``) and the
OTLP protobuf JSON mapping otherwise; search takes Tempo's ``tags``/``minDuration``/``maxDuration``/
``limit``/``start``/``end`` and a small TraceQL subset (``q``); tag names and values come from a
bounded sample of recent spans. Guarded by the query token like every query path (§11).
"""

from __future__ import annotations

import json
import re
import shlex
import time
from collections.abc import Callable
from typing import Any, Final

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import PlainTextResponse, Response

from reach_collector.api.numbers import parse_int
from reach_collector.api.tempo_otlp import to_traces_data, trace_by_id_response, traces_json
from reach_collector.api.traces import DEFAULT_LIMIT, MAX_LIMIT
from reach_collector.query import tags
from reach_collector.store.base import TraceFilter, TraceStore
from reach_collector.text.durations import GO_UNITS, DurationError, parse_duration_s
from reach_otel import semconv as sc

__all__ = ["PREFIX", "parse_duration_ms", "parse_traceql", "tempo_router"]

PREFIX: Final = "/tempo"
ECHO: Final = "/api/echo"
TRACE_V1: Final = "/api/traces/{trace_id}"
TRACE_V2: Final = "/api/v2/traces/{trace_id}"
SEARCH: Final = "/api/search"
TAGS_V1: Final = "/api/search/tags"
TAGS_V2: Final = "/api/v2/search/tags"
VALUES_V1: Final = "/api/search/tag/{name}/values"
VALUES_V2: Final = "/api/v2/search/tag/{name}/values"
PROTOBUF: Final = "application/protobuf"

TAG_LOOKBACK_S: Final = 86_400.0  # tag lookups without start/end look at the last day
TAG_SCAN_ROWS: Final = 100_000  # spans sampled per tag lookup (bounded work per request)
TAG_LIMIT: Final = 1_000
INTRINSICS: Final = ("duration", "kind", "name", "rootName", "rootServiceName", "status", "traceDuration")
_TRACE_ID: Final = re.compile(r"^[0-9a-fA-F]{1,32}$")
MAX_UNIX_S: Final = (2**63 - 1) // 1_000_000_000  # start/end in seconds whose nanoseconds fit int64
_CONDITION: Final = re.compile(r'^\s*([A-Za-z_.][\w.\-]*)\s*(=|>=|>)\s*("(?:[^"\\]|\\.)*"|[^\s"]+)\s*$')
_COLUMNS: Final = {"span": "attributes", "resource": "resource"}  # never user input in SQL text


def parse_trace_id(value: str) -> str:
    """Tempo accepts ids shorter than 32 hex digits and left-pads them with zeros."""
    if not _TRACE_ID.match(value) or int(value, 16) == 0:
        raise HTTPException(400, f"malformed trace id {value[:64]!r}: expected up to 32 hex digits")
    return value.lower().rjust(32, "0")


def parse_duration_ms(value: str, name: str) -> float:
    """A Go duration (``100ms``, ``1.5s``, ``1m30s``: the one parser in Go's units) in
    milliseconds; HTTP 400 when malformed."""
    try:
        return parse_duration_s(value, name, units=GO_UNITS) * 1000
    except DurationError as exc:
        raise HTTPException(400, str(exc)) from None


class _Filters:
    """Accumulates search conditions into a TraceFilter (+ a max duration Tempo also supports)."""

    def __init__(self) -> None:
        self.service: str | None = None
        self.agent: str | None = None
        self.errors_only = False
        self.min_ms: float | None = None
        self.max_ms: float | None = None
        self.attributes: list[tuple[str, str]] = []

    def tag(self, key: str, value: str) -> None:
        scope, _, bare = key.partition(".") if key.startswith(("span.", "resource.", ".")) else ("", "", key)
        if bare in (sc.SERVICE_NAME, "rootServiceName") and scope != "span":
            self.service = value
        elif bare == sc.GEN_AI_AGENT_NAME and scope != "resource":
            self.agent = value
        elif bare in ("status", "status.code", "error") and scope == "":
            if value.lower() not in ("error", "true", "2", "status_code_error"):
                raise HTTPException(400, f"only {bare}=error can be searched, got {value[:40]!r}")
            self.errors_only = True
        elif scope == "resource":
            raise HTTPException(400, f"searching resource attributes other than service.name: {key[:80]!r}")
        else:
            self.attributes.append((bare, value))

    def build(self, limit: int, since_ns: int | None, until_ns: int | None) -> TraceFilter:
        return TraceFilter(
            service=self.service,
            agent=self.agent,
            errors_only=self.errors_only,
            since_ns=since_ns,
            until_ns=until_ns,
            min_duration_ms=self.min_ms,
            attributes=tuple(self.attributes[:16]),
            limit=limit,
        )


def _string(literal: str) -> str:
    """A TraceQL string literal (JSON's escapes) → its text; 400 for a bad escape or a lone
    surrogate (which no store can hold)."""
    try:
        text = json.loads(literal)
        text.encode("utf-8")
    except ValueError as exc:  # UnicodeEncodeError is one
        reason = "a lone surrogate" if isinstance(exc, UnicodeEncodeError) else "a bad escape"
        raise HTTPException(400, f"TraceQL: string {literal[:40]!r} has {reason}") from None
    return str(text)


def parse_traceql(query: str, filters: _Filters) -> None:
    """The subset of TraceQL we answer: ``{}`` or ``{ cond && cond }`` with ``key = value``
    (``resource.service.name``, ``span.K``/``.K``, ``status = error``) and ``duration > 100ms``."""
    text = query.strip()
    if not (text.startswith("{") and text.endswith("}")):
        raise HTTPException(400, "TraceQL: expected one spanset filter { ... }")
    body = text[1:-1].strip()
    if not body:
        return
    for condition in body.split("&&"):
        match = _CONDITION.match(condition)
        if match is None:
            raise HTTPException(
                400, f"TraceQL: unsupported condition {condition.strip()[:80]!r} (supported: key = value "
                "joined by &&, status = error, duration > 100ms)",
            )  # fmt: skip
        key, op, raw = match.groups()
        value = _string(raw) if raw.startswith('"') else raw
        if key in ("duration", "traceDuration"):
            if op == "=":
                raise HTTPException(400, "TraceQL: duration supports > and >= only")
            filters.min_ms = parse_duration_ms(str(value), key)
        elif op != "=":
            raise HTTPException(400, f"TraceQL: {key} supports = only")
        else:
            filters.tag(key, str(value))


def _int_param(
    request: Request, name: str, low: int = 0, high: int = MAX_UNIX_S, what: str = "unix seconds"
) -> int | None:
    """An integer query parameter (``start``/``end`` in unix seconds by default); 400 naming it."""
    raw = request.query_params.get(name)
    if not raw:
        return None
    try:
        return parse_int(raw, name, low, high, what)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None


def _window_ns(request: Request, clock: Callable[[], float]) -> tuple[int, int]:
    start, end = _int_param(request, "start"), _int_param(request, "end")
    hi = int((end if end is not None else clock()) * 1e9)
    lo = int(start * 1e9) if start is not None else hi - int(TAG_LOOKBACK_S * 1e9)
    return lo, hi


def _search_json(row: dict[str, Any]) -> dict[str, Any]:
    start, end = int(row["first_start_ns"]), int(row["last_end_ns"])
    services = row.get("services") or []
    return {
        "traceID": row["trace_id"],
        "rootServiceName": services[0] if services else "<root span not yet received>",
        "rootTraceName": row["root_name"] or "",
        "startTimeUnixNano": str(start),
        "durationMs": max(0, (end - start) // 1_000_000),
    }


def _value_type(text: str) -> tuple[str, str]:
    """A JSON-encoded stored value → (Tempo tag type, its text)."""
    value = json.loads(text)
    if isinstance(value, bool):
        return "bool", "true" if value else "false"
    if isinstance(value, int):
        return "int", str(value)
    if isinstance(value, float):
        return "float", repr(value)
    return "string", value if isinstance(value, str) else text


def tempo_router(store: TraceStore, clock: Callable[[], float] = time.time) -> APIRouter:
    """The Tempo-compatible API over ``store``; mount with ``app.include_router(...)``."""
    router = APIRouter(prefix=PREFIX, tags=["tempo"])

    def keys(scope: str, lo: int, hi: int) -> list[str]:
        return tags.attribute_keys(store, _COLUMNS[scope], lo, hi, TAG_SCAN_ROWS, TAG_LIMIT)

    def values(scope: str, key: str, lo: int, hi: int) -> list[tuple[str, str]]:
        found = tags.attribute_values(store, _COLUMNS[scope], key, lo, hi, TAG_SCAN_ROWS, TAG_LIMIT)
        return [_value_type(v) for v in found]

    def intrinsic_values(name: str, lo: int, hi: int) -> list[tuple[str, str]]:
        if name == "status":
            return [("keyword", s) for s in ("error", "ok", "unset")]
        if name == "kind":
            return [("keyword", k) for k in ("client", "consumer", "internal", "producer", "server")]
        if name in ("name", "rootName"):
            return [("string", n) for n in tags.span_names(store, lo, hi, TAG_SCAN_ROWS, TAG_LIMIT)]
        if name == "rootServiceName":
            return values("resource", sc.SERVICE_NAME, lo, hi)
        return []

    @router.get(ECHO, response_class=PlainTextResponse)
    def echo() -> str:
        return "echo"

    def trace(trace_id: str, request: Request, v2: bool) -> Response:
        tid = parse_trace_id(trace_id)
        rows = store.trace_spans(tid)
        if not rows:
            raise HTTPException(404, f"trace {tid} not found")
        data = to_traces_data(rows)
        if PROTOBUF in request.headers.get("accept", ""):
            body = trace_by_id_response(data) if v2 else data.SerializeToString()
            return Response(body, media_type=PROTOBUF)
        document = traces_json(data)
        return Response(json.dumps({"trace": document} if v2 else document), media_type="application/json")

    @router.get(TRACE_V1)
    def trace_v1(trace_id: str, request: Request) -> Response:
        return trace(trace_id, request, v2=False)

    @router.get(TRACE_V2)
    def trace_v2(trace_id: str, request: Request) -> Response:
        return trace(trace_id, request, v2=True)

    @router.get(SEARCH)
    def search(request: Request) -> dict[str, Any]:
        params = request.query_params
        filters = _Filters()
        if params.get("q"):
            parse_traceql(params["q"], filters)
        if params.get("tags"):
            try:
                items = shlex.split(params["tags"])
            except ValueError as exc:
                raise HTTPException(400, f"tags: {exc}") from None
            for item in items:
                key, sep, value = item.partition("=")
                if not sep or not key:
                    raise HTTPException(400, f"tags: expected key=value, got {item[:80]!r}")
                filters.tag(key, value)
        if params.get("minDuration"):
            filters.min_ms = parse_duration_ms(params["minDuration"], "minDuration")
        if params.get("maxDuration"):
            filters.max_ms = parse_duration_ms(params["maxDuration"], "maxDuration")
        limit = _int_param(request, "limit", -(2**63), 2**63, "an integer") or DEFAULT_LIMIT
        start, end = _int_param(request, "start"), _int_param(request, "end")
        f = filters.build(
            max(1, min(limit, MAX_LIMIT)),
            start * 1_000_000_000 if start is not None else None,
            end * 1_000_000_000 if end is not None else None,
        )
        found = [_search_json(row) for row in store.search(f)]
        if filters.max_ms is not None:
            found = [t for t in found if t["durationMs"] <= filters.max_ms]
        return {
            "traces": found,
            "metrics": {"inspectedTraces": len(found), "completedJobs": 1, "totalJobs": 1},
        }

    @router.get(TAGS_V1)
    def tags_v1(request: Request) -> dict[str, Any]:
        lo, hi = _window_ns(request, clock)
        return {"tagNames": sorted(set(keys("span", lo, hi)) | set(keys("resource", lo, hi)))}

    @router.get(TAGS_V2)
    def tags_v2(request: Request) -> dict[str, Any]:
        lo, hi = _window_ns(request, clock)
        wanted = request.query_params.get("scope") or "all"
        if wanted not in ("all", "span", "resource", "intrinsic"):
            raise HTTPException(400, "scope must be one of all, span, resource, intrinsic")
        scopes = []
        for scope in ("resource", "span"):
            if wanted in ("all", scope):
                scopes.append({"name": scope, "tags": keys(scope, lo, hi)})
        if wanted in ("all", "intrinsic"):
            scopes.append({"name": "intrinsic", "tags": list(INTRINSICS)})
        return {"scopes": scopes}

    @router.get(VALUES_V1)
    def values_v1(name: str, request: Request) -> dict[str, Any]:
        lo, hi = _window_ns(request, clock)
        found = values("span", name, lo, hi) or values("resource", name, lo, hi)
        return {"tagValues": [text for _, text in found]}

    @router.get(VALUES_V2)
    def values_v2(name: str, request: Request) -> dict[str, Any]:
        lo, hi = _window_ns(request, clock)
        scope, _, key = name.partition(".")
        if scope in _COLUMNS and key:
            found = values(scope, key, lo, hi)
        elif scope == "" and key:  # ".key": span or resource, as TraceQL's unscoped attributes
            found = values("span", key, lo, hi) or values("resource", key, lo, hi)
        elif name in INTRINSICS:
            found = intrinsic_values(name, lo, hi)
        else:
            raise HTTPException(
                400, f"tag {name[:80]!r}: expected span.KEY, resource.KEY, .KEY or an intrinsic"
            )
        return {"tagValues": [{"type": kind, "value": text} for kind, text in found]}

    return router

"""`POST /api/feedback` (ingest scope): a user's verdict on a trace, from a front end that only has
its id, stored as the evaluation ``reach_otel.feedback()`` and OTLP logs would store (202 once
committed); `GET /api/metrics/quality`: the evaluations of a window, grouped (SPEC §18)."""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Callable
from typing import Any, Final

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse

from reach_collector.api._body import json_object
from reach_collector.ingest.evaluations import FEEDBACK, MAX_EXPLANATION, MAX_TEXT
from reach_collector.ingest.service import IngestService
from reach_collector.ingest.writer import QueueFull, WriterClosed
from reach_collector.query import evaluations
from reach_collector.store.base import TraceStore
from reach_collector.text.windows import WindowError, parse_window
from reach_otel import semconv as sc

__all__ = ["FEEDBACK_PATH", "QUALITY_PATH", "evaluations_router", "parse_feedback"]

FEEDBACK_PATH: Final = "/api/feedback"
QUALITY_PATH: Final = "/api/metrics/quality"
_DEFAULT_WINDOW: Final = "1h"
_MAX_BODY: Final = 16_384
_TRACE_ID: Final = re.compile(r"[0-9a-fA-F]{32}")
_SPAN_ID: Final = re.compile(r"[0-9a-fA-F]{16}")
_KNOWN: Final = frozenset({"trace_id", "span_id", "name", "score", "label", "comment"})


def _hex_id(body: dict[str, Any], key: str, pattern: re.Pattern[str], digits: int) -> str | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not pattern.fullmatch(value) or int(value, 16) == 0:
        raise ValueError(f"{key}: expected {digits} hex digits, not all zero; got {str(value)[:64]!r}")
    return value.lower()


def _text(body: dict[str, Any], key: str, limit: int) -> str | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ValueError(f"{key}: expected a non-empty string, got {str(value)[:60]!r}")
    if len(value) > limit:
        raise ValueError(f"{key}: longer than {limit} characters")
    return value


def parse_feedback(body: dict[str, Any], now_ns: int) -> tuple[Any, ...]:
    """``{trace_id, span_id?, name?, score?, label?, comment?}`` → an evaluation row (store.schema
    order); ValueError names the field that is wrong. No ``span_id``: the trace's root span,
    found when the trace is read."""
    unknown = sorted(set(body) - _KNOWN)
    if unknown:
        raise ValueError(f"unknown field {unknown[0][:40]!r}: expected {', '.join(sorted(_KNOWN))}")
    if body.get("trace_id") is None:
        raise ValueError("trace_id: required")
    trace_id = _hex_id(body, "trace_id", _TRACE_ID, 32)
    span_id = _hex_id(body, "span_id", _SPAN_ID, 16)
    name = _text(body, "name", MAX_TEXT) or sc.EVALUATION_USER_FEEDBACK
    label = _text(body, "label", MAX_TEXT)
    comment = _text(body, "comment", MAX_EXPLANATION)
    score = body.get("score")
    if score is not None and (
        isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score)
    ):
        raise ValueError(f"score: expected a finite number, got {str(score)[:40]!r}")
    if score is None and label is None and comment is None:
        raise ValueError("score, label or comment: a feedback needs at least one")
    value = float(score) if score is not None else None
    return (now_ns, trace_id, span_id, None, name, value, label, comment, None, None, FEEDBACK)


def evaluations_router(store: TraceStore, ingest: IngestService, clock: Callable[[], float]) -> APIRouter:
    router = APIRouter(tags=["evaluations"])

    @router.post(FEEDBACK_PATH, status_code=202)
    async def post_feedback(request: Request) -> JSONResponse:
        body = await json_object(request, _MAX_BODY)
        try:
            row = parse_feedback(body, int(clock() * 1_000_000_000))
        except ValueError as exc:
            raise HTTPException(400, str(exc)) from None
        try:
            future = ingest.submit_evaluations([row])
        except QueueFull as exc:
            raise HTTPException(429, str(exc), {"Retry-After": str(exc.retry_after)}) from None
        except WriterClosed:
            raise HTTPException(503, "the collector is shutting down", {"Retry-After": "1"}) from None
        assert future is not None
        try:
            await asyncio.wrap_future(future)
        except Exception:
            raise HTTPException(503, "could not store the feedback; retry", {"Retry-After": "2"}) from None
        return JSONResponse(
            {"accepted": True, "trace_id": row[1], "span_id": row[2], "name": row[4]}, status_code=202
        )

    @router.get(QUALITY_PATH)
    def get_quality(window: str | None = None, by: str | None = None) -> dict[str, Any]:
        try:
            window_s = parse_window(window if window is not None else _DEFAULT_WINDOW, "window")
        except WindowError as exc:
            raise HTTPException(400, str(exc)) from None
        group = by if by is not None else "agent"
        if group not in evaluations.BY_VALUES:
            raise HTTPException(
                400, f"by must be one of {', '.join(evaluations.BY_VALUES)}; got {group[:40]!r}"
            )
        return evaluations.quality(store, int(clock() * 1_000_000_000), window_s, group)

    return router

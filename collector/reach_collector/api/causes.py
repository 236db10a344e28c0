"""`GET /api/traces/{id}/cause` and `GET /api/causes?window=15m[&agent=][&service=]` (SPEC §17):
validate the request, delegate to query.cause and query.causes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from fastapi import APIRouter, HTTPException

from reach_collector.api.traces import parse_trace_id
from reach_collector.query.cause import trace_cause
from reach_collector.query.causes import window_causes
from reach_collector.query.pricing import PriceTable
from reach_collector.store.base import TraceStore
from reach_collector.text.windows import WindowError, parse_window

__all__ = ["CAUSES", "TRACE_CAUSE", "causes_router"]

TRACE_CAUSE: Final = "/api/traces/{trace_id}/cause"
CAUSES: Final = "/api/causes"
_DEFAULT_WINDOW: Final = "15m"
MAX_NAME: Final = 256  # an agent or service name longer than this is not one


def _name(value: str | None, param: str) -> str | None:
    if value is None:
        return None
    if not 0 < len(value) <= MAX_NAME:
        raise HTTPException(400, f"{param} must be 1 to {MAX_NAME} characters")
    return value


def causes_router(
    store: TraceStore,
    clock: Callable[[], float],
    prices: Mapping[str, Mapping[str, float]] | None = None,
) -> APIRouter:
    """Causes over ``store``; ``clock()`` (unix seconds) is "now"; ``prices`` in USD per 1M tokens
    by model (the config file's ``prices``), read once."""
    router = APIRouter(tags=["causes"])
    table = PriceTable(prices)

    @router.get(TRACE_CAUSE)
    def get_trace_cause(trace_id: str) -> dict[str, Any]:
        tid = parse_trace_id(trace_id)
        rows = store.trace_spans(tid)
        if not rows:
            raise HTTPException(404, f"trace {tid} not found")
        return trace_cause(tid, rows, table).json()

    @router.get(CAUSES)
    def get_causes(
        window: str | None = None, agent: str | None = None, service: str | None = None
    ) -> dict[str, Any]:
        try:
            window_s = parse_window(window if window is not None else _DEFAULT_WINDOW, "window")
        except WindowError as exc:
            raise HTTPException(400, str(exc)) from None
        who, where = _name(agent, "agent"), _name(service, "service")
        now_ns = int(clock() * 1_000_000_000)
        body = window_causes(store, now_ns, window_s, table, agent=who, service=where)
        if who is not None:
            body["agent"] = who
        if where is not None:
            body["service"] = where
        return body

    return router

"""`GET /api/topology?window=1h[&service=]`: validate the query string, delegate to topology (§15)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from fastapi import APIRouter, HTTPException

from reach_collector.query import topology
from reach_collector.query.judged import DEFAULT_JUDGEMENT, Judgement
from reach_collector.store.base import TraceStore
from reach_collector.text.windows import WindowError, parse_window

__all__ = ["TOPOLOGY", "topology_router"]

TOPOLOGY: Final = "/api/topology"
_DEFAULT_WINDOW: Final = "1h"
_MAX_SERVICE: Final = 256  # a service.name longer than this is not one


def topology_router(
    store: TraceStore,
    clock: Callable[[], float],
    prices: Mapping[str, Mapping[str, float]] | None = None,
    judgement: Judgement = DEFAULT_JUDGEMENT,
) -> APIRouter:
    """The topology over ``store``; ``clock()`` (unix seconds) is "now"; ``prices`` in USD per 1M
    tokens by model (the config file's ``prices``)."""
    router = APIRouter(tags=["topology"])
    price_table: Mapping[str, Mapping[str, float]] = dict(prices or {})

    @router.get(TOPOLOGY)
    def get_topology(window: str | None = None, service: str | None = None) -> dict[str, Any]:
        try:
            window_s = parse_window(window if window is not None else _DEFAULT_WINDOW, "window")
        except WindowError as exc:
            raise HTTPException(400, str(exc)) from None
        if service is not None and not 0 < len(service) <= _MAX_SERVICE:
            raise HTTPException(400, f"service must be 1 to {_MAX_SERVICE} characters (a service.name)")
        now_ns = int(clock() * 1_000_000_000)
        return topology.topology(store, now_ns, window_s, price_table, service, judgement)

    return router

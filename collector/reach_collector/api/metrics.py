"""`GET /api/metrics/golden|timeseries|agents`: validate the query string, delegate to metrics."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from fastapi import APIRouter, HTTPException

from reach_collector.query import metrics
from reach_collector.query.judged import DEFAULT_JUDGEMENT, Judgement
from reach_collector.store.base import TraceStore
from reach_collector.text.times import parse_time_ns
from reach_collector.text.windows import WindowError, parse_window

__all__ = ["AGENTS", "GOLDEN", "TIMESERIES", "metrics_router"]

GOLDEN: Final = "/api/metrics/golden"
TIMESERIES: Final = "/api/metrics/timeseries"
AGENTS: Final = "/api/metrics/agents"

_DEFAULT_WINDOW: Final = "5m"
_DEFAULT_STEP: Final = "1m"
_DEFAULT_SINCE: Final = "1h"


def _window(value: str | None, name: str, default: str) -> int:
    try:
        return parse_window(value if value is not None else default, name)
    except WindowError as exc:
        raise HTTPException(400, str(exc)) from None


def _by(value: str | None) -> str:
    by = value if value is not None else "agent"
    if by not in metrics.BY_VALUES:
        raise HTTPException(400, f"by must be one of {', '.join(metrics.BY_VALUES)}; got {by[:40]!r}")
    return by


def metrics_router(
    store: TraceStore,
    clock: Callable[[], float],
    prices: Mapping[str, Mapping[str, float]] | None = None,
    judgement: Judgement = DEFAULT_JUDGEMENT,
) -> APIRouter:
    """The metrics API over ``store``; ``clock()`` (unix seconds) is "now"; ``prices`` in USD per
    1M tokens by model (the config file's ``prices``)."""
    router = APIRouter(tags=["metrics"])
    price_table: Mapping[str, Mapping[str, float]] = dict(prices or {})

    def now_ns() -> int:
        return int(clock() * 1_000_000_000)

    @router.get(GOLDEN)
    def get_golden(window: str | None = None, by: str | None = None) -> dict[str, Any]:
        window_s = _window(window, "window", _DEFAULT_WINDOW)
        return metrics.golden(store, now_ns(), window_s, _by(by))

    @router.get(TIMESERIES)
    def get_timeseries(
        metric: str | None = None,
        by: str | None = None,
        step: str | None = None,
        since: str | None = None,
        until: str | None = None,
    ) -> dict[str, Any]:
        name = metric if metric is not None else "calls"
        if name not in metrics.SERIES_METRICS:
            raise HTTPException(
                400, f"metric must be one of {', '.join(metrics.SERIES_METRICS)}; got {name[:40]!r}"
            )
        group = _by(by)
        step_s = _window(step, "step", _DEFAULT_STEP)
        now_s = clock()
        try:
            end_ns = parse_time_ns(until, now_s) if until else int(now_s * 1_000_000_000)
            since_ns = parse_time_ns(since if since else _DEFAULT_SINCE, now_s)
        except ValueError as exc:
            raise HTTPException(400, f"since/until: {exc}") from None
        if since_ns >= end_ns:
            raise HTTPException(400, "since must be before until (or now)")
        try:
            return metrics.timeseries(store, end_ns, since_ns, step_s, name, group)
        except ValueError as exc:
            raise HTTPException(400, str(exc)) from None

    @router.get(AGENTS)
    def get_agents(window: str | None = None) -> dict[str, Any]:
        window_s = _window(window, "window", _DEFAULT_WINDOW)
        return metrics.agents(store, now_ns(), window_s, price_table, judgement)

    return router

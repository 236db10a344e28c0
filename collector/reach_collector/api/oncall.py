"""`GET /api/oncall[?at=ISO]`: who is on call in each schedule — now, or at a previewed instant —
why (the layer or an override), who is next and when they take over; and the configured
``time_zone``, which the query commands print times in."""

from __future__ import annotations

from typing import Any, Final

from fastapi import APIRouter, HTTPException

from reach_collector.alerting.evaluation.engine import AlertEngine
from reach_collector.text.times import parse_time_ns

__all__ = ["ONCALL", "oncall_router"]

ONCALL: Final = "/api/oncall"


def oncall_router(engine: AlertEngine) -> APIRouter:
    router = APIRouter(tags=["oncall"])

    @router.get(ONCALL)
    def get_oncall(at: str | None = None) -> dict[str, Any]:
        if at is None or not at.strip():
            return {**engine.oncall(), "time_zone": engine.setup.time_zone}
        try:
            instant = parse_time_ns(at, engine.clock()) / 1e9
        except ValueError as exc:
            raise HTTPException(400, f"at: {exc}") from None
        return {**engine.oncall(instant), "time_zone": engine.setup.time_zone}

    return router

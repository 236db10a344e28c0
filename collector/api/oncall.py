"""`GET /api/oncall`: who is on call now in each schedule, who is next, and when they take over."""

from __future__ import annotations

from typing import Any, Final

from fastapi import APIRouter
from reach_collector.alerting.engine import AlertEngine

__all__ = ["ONCALL", "oncall_router"]

ONCALL: Final = "/api/oncall"


def oncall_router(engine: AlertEngine) -> APIRouter:
    router = APIRouter(tags=["oncall"])

    @router.get(ONCALL)
    def get_oncall() -> dict[str, Any]:
        return engine.oncall()

    return router

"""`POST /api/heartbeats` (ingest scope) and `GET /api/agents`: agents saying they are alive (or,
with ``status: "stopped"``, that they exited cleanly), and who is live, lost or stopped. Beats are
stored through the writer thread, so a 202 means committed. An agent whose beats name no service
is shown with the service of its latest spans."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, Final, NamedTuple

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse

from reach_collector.alerting.evaluation.engine import AlertEngine
from reach_collector.api._body import json_object
from reach_collector.exposition.registry import Exposition
from reach_collector.ingest.writer import Writer, WriterClosed
from reach_collector.query.heartbeats import fill_services
from reach_collector.store.base import TraceStore

__all__ = [
    "AGENTS",
    "HEARTBEATS",
    "LIVE",
    "STOPPED",
    "ParsedHeartbeat",
    "heartbeats_router",
    "parse_heartbeat",
]

HEARTBEATS: Final = "/api/heartbeats"
AGENTS: Final = "/api/agents"

_MAX_ID: Final = 256
_MAX_URL: Final = 2048
_MAX_CAPABILITIES: Final = 100
LIVE: Final = "live"
STOPPED: Final = "stopped"  # a clean exit deregisters: no heartbeat is expected until the next one


def _text(body: dict[str, Any], key: str, limit: int, required: bool = False) -> str | None:
    value = body.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{key}: expected a non-empty string, got {value!r:.60}")
    if len(value) > limit:
        raise ValueError(f"{key}: longer than {limit} characters")
    return value


class ParsedHeartbeat(NamedTuple):
    agent_id: str
    service: str | None
    endpoint: str | None
    capabilities: str | None  # JSON
    status: str  # live | stopped


def parse_heartbeat(body: dict[str, Any]) -> ParsedHeartbeat:
    """``{agent_id, endpoint?, capabilities?, service?, status?}`` → a ``ParsedHeartbeat``;
    ValueError says which field is wrong."""
    agent_id = _text(body, "agent_id", _MAX_ID, required=True)
    assert agent_id is not None
    service = _text(body, "service", _MAX_ID)
    endpoint = _text(body, "endpoint", _MAX_URL)
    capabilities = body.get("capabilities")
    if capabilities is not None:
        if not isinstance(capabilities, list) or len(capabilities) > _MAX_CAPABILITIES:
            raise ValueError(f"capabilities: expected a list of at most {_MAX_CAPABILITIES} strings")
        if not all(isinstance(c, str) and 0 < len(c) <= _MAX_ID for c in capabilities):
            raise ValueError(
                f"capabilities: every entry must be a non-empty string of ≤ {_MAX_ID} characters"
            )
    caps = json.dumps(capabilities) if capabilities is not None else None
    status = body.get("status", LIVE)
    if status not in (LIVE, STOPPED):
        raise ValueError(f"status: expected {LIVE!r} or {STOPPED!r} (a clean exit), got {status!r:.60}")
    return ParsedHeartbeat(agent_id, service, endpoint, caps, status)


def heartbeats_router(
    store: TraceStore,
    writer: Writer,
    engine: AlertEngine,
    exposition: Exposition,
    clock: Callable[[], float],
) -> APIRouter:
    router = APIRouter(tags=["heartbeats"])

    @router.post(HEARTBEATS, status_code=202)
    async def post_heartbeat(request: Request) -> JSONResponse:
        body = await json_object(request)
        try:
            beat = parse_heartbeat(body)
        except ValueError as exc:
            raise HTTPException(400, str(exc)) from None
        now = clock()
        row = (
            beat.agent_id,
            int(now * 1_000_000_000),
            beat.service,
            beat.endpoint,
            beat.capabilities,
            beat.status,
        )
        try:
            future = writer.call(lambda _: store.append("heartbeats", [row]))
        except WriterClosed:
            raise HTTPException(503, "the collector is shutting down", {"Retry-After": "1"}) from None
        await asyncio.wrap_future(future)
        exposition.record_heartbeat(beat.agent_id, now, stopped=beat.status == STOPPED)
        return JSONResponse(
            {"agent_id": beat.agent_id, "accepted": True, "status": beat.status}, status_code=202
        )

    @router.get(AGENTS)
    def get_agents() -> dict[str, Any]:
        now = engine.clock()
        body = engine.agents(now)
        fill_services(store, body["agents"], int(now * 1_000_000_000))
        return body

    return router

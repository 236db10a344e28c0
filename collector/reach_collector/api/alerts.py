"""`GET /api/alerts`, `POST /api/alerts/{fingerprint}/ack`, `POST /api/alerts/replay` and
`GET /api/alerts/deliveries`: the live engine's alerts joined with the history kept in the store.

An ack takes an empty body (a plain ``curl -X POST`` of the page's ack URL) or ``{"by", "comment"}``;
acking an episode again answers 200 with ``already_acknowledged: true``."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, Final, TypeVar

from fastapi import APIRouter, HTTPException, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from reach_collector.alerting.evaluation.engine import AlertEngine
from reach_collector.alerting.evaluation.replay import ReplayCancelled, parse_replay_request
from reach_collector.alerting.evaluation.store_history import StoreHistory
from reach_collector.api._body import json_object
from reach_collector.text.redact_url import redact_url, scrub

__all__ = ["ALERTS", "ANONYMOUS", "DELIVERIES", "REPLAY", "alerts_router", "parse_ack"]

ALERTS: Final = "/api/alerts"
REPLAY: Final = "/api/alerts/replay"
DELIVERIES: Final = "/api/alerts/deliveries"
ACK: Final = "/api/alerts/{fingerprint}/ack"
ANONYMOUS: Final = "anonymous"  # who acked, when the request does not say
_MAX_BY: Final = 256
_MAX_COMMENT: Final = 2048
_DISCONNECT_POLL_S: Final = 0.2  # how soon a replay notices that its client went away
_REPLAY_RETRY_S: Final = 5  # Retry-After when every replay slot is taken
T = TypeVar("T")


def parse_ack(body: dict[str, Any]) -> tuple[str, str | None]:
    """``{"by"?, "comment"?}`` → (by, comment); ValueError says which field is wrong."""
    by = body.get("by", ANONYMOUS)
    if not isinstance(by, str) or not by.strip() or len(by) > _MAX_BY:
        raise ValueError(f"by: expected who acknowledges, a non-empty string of ≤ {_MAX_BY} characters")
    comment = body.get("comment")
    if comment is not None and (not isinstance(comment, str) or len(comment) > _MAX_COMMENT):
        raise ValueError(f"comment: expected a string of ≤ {_MAX_COMMENT} characters")
    return by.strip(), (comment.strip() or None) if comment is not None else None


def _shown(delivery: dict[str, Any]) -> dict[str, Any]:
    url = delivery.get("url")
    if not url:
        return delivery
    error = delivery.get("error")
    return {**delivery, "url": redact_url(url), "error": scrub(error, url) if error else error}


async def _while_connected(request: Request, work: Callable[[Callable[[], bool]], T]) -> T:
    """``work(cancelled)`` on a worker thread; ``cancelled()`` turns true once the client has
    disconnected, so work that checks it as it goes stops instead of computing for nobody."""
    gone = threading.Event()
    task = asyncio.ensure_future(run_in_threadpool(work, gone.is_set))
    while not task.done():
        await asyncio.wait({task}, timeout=_DISCONNECT_POLL_S)
        if not task.done() and not gone.is_set() and await request.is_disconnected():
            gone.set()
    return task.result()


def alerts_router(engine: AlertEngine, history: StoreHistory | None = None) -> APIRouter:
    router = APIRouter(tags=["alerts"])
    # Replays computing at once: each may cost up to replay_max_evaluations, so callers wait their turn.
    replay_slots = threading.BoundedSemaphore(engine.setup.alerting.replay_concurrency)

    @router.get(ALERTS)
    def get_alerts(state: str | None = None, limit: int = Query(1000, ge=1, le=10_000)) -> dict[str, Any]:
        try:
            live: list[dict[str, Any]] = engine.alerts(state)["alerts"]
        except ValueError as exc:
            raise HTTPException(400, str(exc)) from None
        if history is not None and not engine.setup.alerting.evaluate:
            # Another collector evaluates (SPEC §16): every episode comes from the shared history.
            return {"alerts": history.episodes(state, limit)}
        if history is None or state in ("pending", "firing"):
            return {"alerts": live[:limit]}
        # Past episodes outlive the engine's memory (a restart, the 15-minute resolved retention).
        seen = {(a["fingerprint"], a["active_at"]) for a in live}
        past = [
            a for a in history.episodes("resolved", limit) if (a["fingerprint"], a["active_at"]) not in seen
        ]
        return {"alerts": (live + past)[:limit]}

    @router.post(ACK)
    async def ack(fingerprint: str, request: Request) -> dict[str, Any]:
        try:
            by, comment = parse_ack(await json_object(request, optional=True))
        except ValueError as exc:
            raise HTTPException(400, str(exc)) from None
        done = engine.acknowledge(fingerprint, by, comment)
        if done is None:
            raise HTTPException(404, "no firing alert with that fingerprint")
        return {
            "fingerprint": fingerprint,
            "acknowledged_by": done.acknowledged_by,
            "already_acknowledged": done.already,
            "comment": None if done.already else comment,
            "alert": done.alert.to_dict(done.acknowledged_by),
        }

    @router.post(REPLAY)
    async def post_replay(request: Request) -> Any:
        body = await json_object(request)
        try:
            since, until, step = parse_replay_request(body, engine.interval_s, engine.clock())
        except ValueError as exc:
            raise HTTPException(400, str(exc)) from None

        def run(cancelled: Callable[[], bool]) -> dict[str, Any]:
            return engine.replay(since, until, step, cancelled=cancelled).to_dict()

        if not replay_slots.acquire(blocking=False):
            busy = engine.setup.alerting.replay_concurrency
            running = f"{busy} replays are" if busy > 1 else "1 replay is"
            raise HTTPException(
                429,
                f"{running} already running (alerting.replay_concurrency); retry in {_REPLAY_RETRY_S}s",
                headers={"Retry-After": str(_REPLAY_RETRY_S)},
            )
        try:
            return await _while_connected(request, run)  # pure: notifies no one, records nothing
        except ValueError as exc:  # over the cost cap: refused before any evaluation
            raise HTTPException(400, str(exc)) from None
        except ReplayCancelled:
            return Response(status_code=499)  # nobody is listening; nginx's "client closed request"
        finally:
            replay_slots.release()  # _while_connected returns only once the work has stopped

    @router.get(DELIVERIES)
    def get_deliveries(
        fingerprint: str | None = None, failed: bool = False, limit: int = Query(1000, ge=1, le=10_000)
    ) -> dict[str, Any]:
        """Delivery attempts, oldest first: the last ``limit`` (of one alert; only failed ones).
        URLs are shown redacted, errors without their secrets — rows recorded before they were
        stored that way included."""
        found = history.deliveries(fingerprint, limit, failed=failed) if history is not None else []
        return {"deliveries": [_shown(d) for d in found]}

    return router

"""`GET /api/conversations?window=&limit=` and `GET /api/conversations/{id}` (SPEC §18): the
conversations of a window with their totals, and one conversation's traces in start order."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from fastapi import APIRouter, HTTPException

from reach_collector.api.numbers import parse_int
from reach_collector.query import conversations as conv
from reach_collector.store.base import TraceStore
from reach_collector.text.windows import WindowError, parse_window

__all__ = ["CONVERSATIONS", "conversations_router"]

CONVERSATIONS: Final = "/api/conversations"
_DEFAULT_WINDOW: Final = "1d"


def _window(value: str | None, default: str) -> int:
    try:
        return parse_window(value if value is not None else default, "window")
    except WindowError as exc:
        raise HTTPException(400, str(exc)) from None


def conversations_router(
    store: TraceStore, clock: Callable[[], float], prices: Mapping[str, Mapping[str, float]] | None = None
) -> APIRouter:
    router = APIRouter(tags=["conversations"])
    price_table = dict(prices or {})

    @router.get(CONVERSATIONS)
    def get_conversations(window: str | None = None, limit: str | None = None) -> dict[str, Any]:
        window_s = _window(window, _DEFAULT_WINDOW)
        count = conv.DEFAULT_LIMIT
        if limit:
            try:  # clamped below; only its length and form are refused
                count = parse_int(limit, "limit", -(2**63), 2**63)
            except ValueError as exc:
                raise HTTPException(400, str(exc)) from None
        count = max(1, min(count, conv.MAX_LIMIT))
        return conv.conversations(store, int(clock() * 1_000_000_000), window_s, price_table, count)

    @router.get(CONVERSATIONS + "/{conversation_id}")
    def get_conversation(conversation_id: str, window: str | None = None) -> dict[str, Any]:
        if not conversation_id.strip() or len(conversation_id) > conv.MAX_ID:
            raise HTTPException(400, f"conversation id: expected 1 to {conv.MAX_ID} characters")
        since = None
        if window is not None:
            since = int((clock() - _window(window, _DEFAULT_WINDOW)) * 1_000_000_000)
        found = conv.conversation(store, conversation_id, since)
        if found is None:
            raise HTTPException(404, f"conversation {conversation_id[:80]!r} not found")
        return found

    return router

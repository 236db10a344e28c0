"""The one way a pure ASGI middleware answers by itself: a JSON ``{"detail": ...}`` error."""

from __future__ import annotations

import json
from collections.abc import Iterable

from starlette.types import Send

__all__ = ["send_detail"]


async def send_detail(
    send: Send, status: int, detail: str, headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    """Answer ``status`` with ``{"detail": detail}`` as JSON, plus ``headers``."""
    body = json.dumps({"detail": detail}).encode()
    start = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": [*start, *headers]})
    await send({"type": "http.response.body", "body": body})

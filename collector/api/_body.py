"""Reading a small JSON object body with a 4xx that says what is wrong (shared by the alerting API)."""

from __future__ import annotations

import json
from typing import Any

from fastapi import HTTPException, Request
from reach_collector.api._json_bounds import check_json

__all__ = ["json_object"]


async def json_object(request: Request, limit: int = 65_536, *, optional: bool = False) -> dict[str, Any]:
    """The request body as a JSON object; 413 over ``limit`` bytes, 400 when it is not one."""
    raw = await request.body()
    if len(raw) > limit:
        raise HTTPException(413, f"body larger than {limit} bytes")
    if not raw.strip() and optional:
        return {}
    check_json(raw)  # 400 for deep nesting or a lone surrogate, before json.loads recurses into it
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise HTTPException(400, f"body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise HTTPException(400, f"body must be a JSON object, got {type(body).__name__}")
    return body

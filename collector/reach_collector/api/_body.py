"""Reading a small JSON object body, never past its size limit, with a 4xx that says what is wrong
(shared by the alerting and heartbeat APIs)."""

from __future__ import annotations

import json
from typing import Any

from fastapi import HTTPException, Request
from starlette.requests import ClientDisconnect

from reach_collector.api._json_bounds import check_json

__all__ = ["json_object", "read_limited"]


async def read_limited(request: Request, limit: int) -> bytes:
    """The request body, read no further than ``limit`` bytes: 413 as soon as a declared length or
    the bytes received pass it, so an oversized body costs at most ``limit`` bytes of memory."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise HTTPException(413, f"body of {declared} bytes is larger than {limit} bytes")
    body = bytearray()
    try:
        async for chunk in request.stream():
            if len(body) + len(chunk) > limit:
                raise HTTPException(413, f"body larger than {limit} bytes")
            body += chunk
    except ClientDisconnect:  # gone mid-body: nobody reads the answer, and it is no error of ours
        raise HTTPException(400, "the client went away before its body ended") from None
    return bytes(body)


async def json_object(request: Request, limit: int = 65_536, *, optional: bool = False) -> dict[str, Any]:
    """The request body as a JSON object; 413 over ``limit`` bytes, 400 when it is not one."""
    raw = await read_limited(request, limit)
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

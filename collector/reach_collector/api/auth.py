"""Bearer-token auth by path scope (§11): ingest vs query; 401 missing/wrong, 403 other scope.

A pure ASGI middleware, so routers added later (metrics, alerts, ...) are covered by their path.
"""

from __future__ import annotations

import hmac
from typing import Final

from starlette.types import ASGIApp, Receive, Scope, Send

from reach_collector.api._asgi import send_detail

INGEST: Final = "ingest"
QUERY: Final = "query"
_INGEST_PATHS: Final = frozenset({"/v1/traces", "/v1/logs", "/api/heartbeats", "/api/feedback"})
_OPEN_PATHS: Final = frozenset({"/healthz", "/", "/ui"})
_OPEN_PREFIXES: Final = ("/ui/",)  # the web console's shell and assets: no data (SPEC §14)


def scope_for(path: str) -> str | None:
    """Which token guards a path; None means open."""
    if path in _OPEN_PATHS or path.startswith(_OPEN_PREFIXES):
        return None
    if path in _INGEST_PATHS or path.rstrip("/") in _INGEST_PATHS:
        return INGEST
    # Everything else (the query API, the Tempo-compatible API, /metrics, docs) needs the
    # query token when one is configured.
    return QUERY


def bearer(value: str | None) -> str | None:
    if not value:
        return None
    scheme, _, token = value.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def _matches(given: str, expected: str | None) -> bool:
    return expected is not None and hmac.compare_digest(given.encode(), expected.encode())


def check(path: str, authorization: str | None, ingest: str | None, query: str | None) -> int | None:
    """None when allowed, else the HTTP status to answer (401 or 403)."""
    needed = scope_for(path)
    if needed is None:
        return None
    expected = ingest if needed == INGEST else query
    if expected is None:
        return None
    token = bearer(authorization)
    if token is None:
        return 401
    if _matches(token, expected):
        return None
    other = query if needed == INGEST else ingest
    return 403 if _matches(token, other) else 401


class AuthMiddleware:
    def __init__(self, app: ASGIApp, ingest_token: str | None, query_token: str | None) -> None:
        self.app = app
        self.ingest_token = ingest_token
        self.query_token = query_token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not (self.ingest_token or self.query_token):
            await self.app(scope, receive, send)
            return
        header = None
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                header = value.decode("latin-1")
                break
        status = check(scope["path"], header, self.ingest_token, self.query_token)
        if status is None:
            await self.app(scope, receive, send)
            return
        message = (
            "missing or invalid bearer token" if status == 401 else "this token may not use this endpoint"
        )
        challenge = [(b"www-authenticate", b'Bearer realm="reach-otel"')] if status == 401 else []
        await send_detail(send, status, message, challenge)

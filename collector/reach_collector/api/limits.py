"""Request-line bounds, before any route runs: a path over ``MAX_URL_BYTES`` or a query string
over ``MAX_QUERY_BYTES`` is answered 414 with a detail naming the limit (a pure ASGI middleware, so
every route is covered, the open ones too). The HTTP server itself accepts request lines far
longer (about 64 KB), which let one URL carry a 12 000-digit duration."""

from __future__ import annotations

from typing import Final

from starlette.types import ASGIApp, Receive, Scope, Send

from reach_collector.api._asgi import send_detail

__all__ = ["MAX_QUERY_BYTES", "MAX_URL_BYTES", "UrlLimitMiddleware"]

MAX_URL_BYTES: Final = 8192  # the path, percent-encoded as sent
MAX_QUERY_BYTES: Final = 8192  # the query string after '?', percent-encoded as sent


def too_long(scope: Scope, max_url: int = MAX_URL_BYTES, max_query: int = MAX_QUERY_BYTES) -> str | None:
    """Why this request line is refused, or None."""
    path = scope.get("raw_path") or scope.get("path", "").encode()
    if len(path) > max_url:
        return f"URL path longer than {max_url} bytes ({len(path)})"
    query = scope.get("query_string", b"")
    if len(query) > max_query:
        return f"query string longer than {max_query} bytes ({len(query)})"
    return None


class UrlLimitMiddleware:
    def __init__(self, app: ASGIApp, max_url: int = MAX_URL_BYTES, max_query: int = MAX_QUERY_BYTES) -> None:
        self.app = app
        self.max_url = max_url
        self.max_query = max_query

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        why = too_long(scope, self.max_url, self.max_query) if scope["type"] == "http" else None
        if why is None:
            await self.app(scope, receive, send)
            return
        await send_detail(send, 414, why)

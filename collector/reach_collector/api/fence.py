"""The cross-site fence: what a browser on another website may make this collector do.

Tokens stop other sites outright (a page cannot learn them, and sending one needs a preflight
this collector never grants). A scope left without a token is fenced three ways instead:

- **Host** — its routes answer only to loopback host names (``localhost``, ``127.x.y.z``,
  ``[::1]``), the address it is bound to, and ``server.allowed_hosts``: a DNS-rebinding page,
  whose requests say ``Host: attacker.example``, gets 403.
- **Origin** — a request that changes state or starts work (any method but GET/HEAD/OPTIONS)
  carrying an ``Origin`` other than the collector's own, or marked cross-site by
  ``Sec-Fetch-Site``, gets 403, token or not; the console, served from the collector itself,
  sends its own origin.
- **Content type** — such a request's body must be ``application/json`` (OTLP routes: their
  own types, checked by the route): the types a form or a no-preflight ``fetch`` can send
  (``text/plain``, form encodings) get 415. An empty body is allowed (``curl -X POST`` of an ack
  URL) — the Origin check covers it.

A pure ASGI middleware, like the auth one, so every router is covered by its path.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Final
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from reach_collector.api._asgi import send_detail
from reach_collector.api.auth import INGEST, QUERY, scope_for

__all__ = ["SiteFence", "host_allowed", "same_origin"]

_SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})
# Routes that read a body of their own types (OTLP protobuf or JSON) and answer 415 themselves.
_OWN_TYPES_PATHS: Final = frozenset({"/v1/traces", "/v1/logs"})
_ANY_ADDRESS: Final = frozenset({"0.0.0.0", "::", ""})
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def _host_name(host: str) -> str:
    """``Host`` header value → the name without port, lower-cased (``[::1]:4318`` → ``::1``)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _is_loopback(name: str) -> bool:
    if name == "localhost" or name.endswith(".localhost"):  # browsers resolve these to loopback only
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_allowed(host: str | None, allowed: Iterable[str]) -> bool:
    """Whether a request's ``Host`` names this collector: loopback, or a name in ``allowed``. A
    request without Host (HTTP/1.0) is not a browser's and passes."""
    if host is None:
        return True
    name = _host_name(host)
    return _is_loopback(name) or name in allowed


def same_origin(origin: str, host: str | None) -> bool:
    """Whether an ``Origin`` header names the site whose ``Host`` received the request."""
    if host is None or origin == "null":
        return False
    try:
        parts = urlsplit(origin)
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
    except ValueError:
        return False
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        return False
    want = urlsplit(f"{parts.scheme}://{host.strip()}")
    try:
        want_port = want.port or _DEFAULT_PORTS[parts.scheme]
    except ValueError:
        return False
    return (parts.hostname, port) == ((want.hostname or ""), want_port)


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


class SiteFence:
    """Refuses foreign Host names on scopes without a token, and cross-site state changes."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        ingest_token: str | None,
        query_token: str | None,
        bind_host: str = "127.0.0.1",
        allowed_hosts: Iterable[str] = (),
    ) -> None:
        self.app = app
        self.open_scopes = {s for s, t in ((INGEST, ingest_token), (QUERY, query_token)) if not t}
        allowed = {h.lower() for h in allowed_hosts}
        if bind_host not in _ANY_ADDRESS:
            allowed.add(_host_name(bind_host if ":" not in bind_host else f"[{bind_host}]"))
        self.allowed = frozenset(allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        await send_detail(send, *refusal)

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        """(status, message) for a request the fence refuses, else None."""
        headers: dict[bytes, str] = {}
        for name, value in scope.get("headers", ()):
            if name in (b"host", b"origin", b"content-type", b"content-length", b"transfer-encoding"):
                headers.setdefault(name, value.decode("latin-1"))
            elif name == b"sec-fetch-site":
                headers[name] = value.decode("latin-1")
        host = headers.get(b"host")
        path = scope["path"]
        needed = scope_for(path)
        if needed in self.open_scopes and not host_allowed(host, self.allowed):
            return 403, (
                f"Host {_host_name(host or '')!r} is not this collector's: with no {needed} token it "
                "answers only to loopback names and server.allowed_hosts"
            )
        if scope.get("method", "GET") in _SAFE_METHODS:
            return None
        origin = headers.get(b"origin")
        if origin is not None and not same_origin(origin, host):
            return 403, f"cross-site request refused: Origin {origin[:200]!r} is not this collector"
        if origin is None and headers.get(b"sec-fetch-site", "").lower() in ("cross-site", "same-site"):
            return 403, "cross-site request refused (Sec-Fetch-Site)"
        if path in _OWN_TYPES_PATHS:
            return None
        content_type = headers.get(b"content-type")
        has_body = (
            headers.get(b"content-length", "0").strip() not in ("", "0") or b"transfer-encoding" in headers
        )
        if has_body and not _is_json(content_type or ""):
            shown = content_type[:100] if content_type else "none"
            return 415, f"send the body as application/json (Content-Type was {shown!r})"
        return None

"""What an HTTP connection may hold before its request starts: uvicorn's protocol with a cap on
open connections, a deadline and a size cap on the request line and headers.

uvicorn has no header timeout (a client that connects and sends a byte a minute is kept forever)
and its ``limit_concurrency`` answers 503 only once a request's headers are complete, so a flood
of connections that never finish theirs is neither counted nor refused. A connection over
``max_connections`` is answered 503 and closed as it is accepted; one whose headers are not complete
``header_timeout`` after its first byte (or after it opened) is answered 408 and closed (closed
silently if it sent nothing); headers over ``max_header_bytes`` get 431. A kept-alive connection
between requests is uvicorn's ``timeout_keep_alive``; the time a body may take is
``api.body_deadline``'s.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from reach_collector.limits import ServerLimits

__all__ = ["limited_protocol", "uvicorn_config"]

log = logging.getLogger(__name__)


def _response(status: str, message: str, *extra: str) -> bytes:
    body = message.encode()
    head = [
        f"HTTP/1.1 {status}",
        "content-type: text/plain; charset=utf-8",
        f"content-length: {len(body)}",
        "connection: close",
        *extra,
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


_REFUSED = _response(
    "503 Service Unavailable", "too many connections (server.max_connections); retry", "retry-after: 1"
)
_HEADERS_TIMEOUT = _response(
    "408 Request Timeout", "request headers not complete in time (server.header_timeout)"
)
_HEADERS_TOO_LARGE = _response(
    "431 Request Header Fields Too Large", "request line and headers too large (server.max_header_bytes)"
)
_WARN_EVERY_S = 60.0


def limited_protocol(base: type[asyncio.Protocol], limits: ServerLimits) -> type[asyncio.Protocol]:
    """``base`` (uvicorn's httptools or h11 protocol) with the limits above. It relies only on what
    both have: ``connections`` (the server's open connections), ``transport``, and ``cycle``, the
    request in progress, which is replaced when a request's headers are complete."""

    class LimitedProtocol(base):  # type: ignore[valid-type, misc]
        _last_warning = 0.0

        def connection_made(self, transport: Any) -> None:
            self._header_timer: asyncio.TimerHandle | None = None
            self._header_bytes = 0
            self._refused = len(self.connections) >= limits.max_connections
            if self._refused:
                self.transport = transport
                transport.write(_REFUSED)
                transport.close()
                _warn_refused(type(self), len(self.connections))
                return
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self._refused:
                return
            before = self.cycle
            waiting = before is None or before.response_complete
            if waiting and self._header_timer is None:
                self._arm()
            super().data_received(data)
            if not waiting or self.transport.is_closing():
                return
            if self.cycle is not before:  # this request's headers are complete
                self._disarm()
                self._header_bytes = 0
                return
            self._header_bytes += len(data)
            if self._header_bytes > limits.max_header_bytes:
                self._disarm()
                self.transport.write(_HEADERS_TOO_LARGE)
                self.transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            if self._refused:
                return
            super().connection_lost(exc)

        def _arm(self) -> None:
            loop = asyncio.get_running_loop()
            self._header_timer = loop.call_later(limits.header_timeout_s, self._headers_late)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_late(self) -> None:
            self._header_timer = None
            if self.transport.is_closing():
                return
            if self._header_bytes:
                self.transport.write(_HEADERS_TIMEOUT)
            self.transport.close()

    LimitedProtocol.__name__ = LimitedProtocol.__qualname__ = f"Limited{base.__name__}"
    return LimitedProtocol


def _warn_refused(cls: Any, open_now: int) -> None:
    now = time.monotonic()
    if now - cls._last_warning >= _WARN_EVERY_S:
        cls._last_warning = now
        log.warning(
            "refusing connections: %d open, the limit (server.max_connections); logged once a minute",
            open_now,
        )


def uvicorn_config(app: Any, limits: ServerLimits, **options: Any) -> Any:
    """A ``uvicorn.Config`` serving ``app`` within ``limits`` (``options`` pass through)."""
    import uvicorn
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    return uvicorn.Config(
        app,
        http=limited_protocol(AutoHTTPProtocol, limits),
        # Typed int but only ever handed to call_later: a fraction of a second is kept as it is.
        timeout_keep_alive=limits.keep_alive_timeout_s,  # type: ignore[arg-type]
        h11_max_incomplete_event_size=limits.max_header_bytes,  # the same cap if h11 serves
        **options,
    )

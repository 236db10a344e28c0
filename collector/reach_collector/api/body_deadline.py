"""The time a request's body may take to arrive (``server.body_timeout``), for every route.

A pure ASGI middleware around ``receive``: a body not complete ``timeout_s`` after the request
started is answered 408 and its connection closed, and the route sees the client gone (Starlette's
``ClientDisconnect``); what the route then sends is dropped, the 408 being the answer. A client
trickling a byte at a time would otherwise hold its connection, and what it sent, forever.
Once the body is complete, ``receive`` is passed through untouched (routes wait on it for the
client to go away).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reach_collector.api._asgi import send_detail

__all__ = ["BodyDeadline"]


class BodyDeadline:
    def __init__(self, app: ASGIApp, timeout_s: float) -> None:
        self.app = app
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = _Request(receive, send, asyncio.get_running_loop().time() + self.timeout_s)
        try:
            await self.app(scope, request.receive, request.send)
        except Exception:
            if not request.timed_out:  # else it is the route giving up on the vanished body
                raise


class _Request:
    def __init__(self, receive: Receive, send: Send, deadline: float) -> None:
        self._receive = receive
        self._send = send
        self._deadline = deadline
        self._body_done = False
        self._started = False
        self.timed_out = False

    async def receive(self) -> Message:
        if self.timed_out:
            return {"type": "http.disconnect"}
        if self._body_done:
            return await self._receive()
        try:
            message = await _before(self._deadline, self._receive())
        except asyncio.TimeoutError:
            self.timed_out = True
            if not self._started:
                await self._answer_408()
            return {"type": "http.disconnect"}
        if message["type"] != "http.request" or not message.get("more_body", False):
            self._body_done = True
        return message

    async def send(self, message: Message) -> None:
        if self.timed_out:
            return
        if message["type"] == "http.response.start":
            self._started = True
        await self._send(message)

    async def _answer_408(self) -> None:
        detail = "request body not complete in time (server.body_timeout)"
        # connection: close, since the rest of the body is never read
        await send_detail(self._send, 408, detail, [(b"connection", b"close")])


async def _before(deadline: float, awaitable: Any) -> Message:
    message: Message
    if sys.version_info >= (3, 11):
        async with asyncio.timeout_at(deadline):
            message = await awaitable
            return message
    remaining = max(0.0, deadline - asyncio.get_running_loop().time())
    message = await asyncio.wait_for(awaitable, remaining)
    return message

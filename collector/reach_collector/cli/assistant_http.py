"""``reach-otel mcp --http``: the assistant's MCP server on streamable HTTP at 127.0.0.1, behind a
bearer credential of its own. Loopback is not a boundary between local users: without it, any
process on the machine could read the collector's traces through this server's query token."""

from __future__ import annotations

import hmac
import os
import secrets
import socket
from typing import Final, TextIO

from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp, Receive, Scope, Send

from reach_collector.api._asgi import send_detail
from reach_collector.api.auth import bearer
from reach_collector.cli.client import read_token_file

__all__ = ["CREDENTIAL_ENV", "BearerGuard", "credential", "serve_http"]

CREDENTIAL_ENV: Final = "REACH_MCP_TOKEN"
HOST: Final = "127.0.0.1"
PATH: Final = "/mcp"


def credential(path: str | None, option: str = "--http-token-file") -> tuple[str, bool]:
    """The credential clients of the HTTP server must send, and whether it was made up here: the
    file at ``path``, else ``$REACH_MCP_TOKEN``, else a new random one."""
    if path:
        return read_token_file(path, option), False
    given = (os.environ.get(CREDENTIAL_ENV) or "").strip()
    if given:
        return given, False
    return secrets.token_urlsafe(32), True


class BearerGuard:
    """An ASGI wrapper answering 401 to any HTTP request without ``Authorization: Bearer <token>``
    (compared in constant time); lifespan events pass through."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._allowed(scope):
            await self.app(scope, receive, send)
            return
        challenge = [(b"www-authenticate", b'Bearer realm="reach-otel mcp"')]
        await send_detail(send, 401, "missing or invalid bearer token for this MCP server", challenge)

    def _allowed(self, scope: Scope) -> bool:
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                given = bearer(value.decode("latin-1"))
                return given is not None and hmac.compare_digest(given.encode("latin-1"), self._token)
        return False


def serve_http(server: MCPServer, port: int, token: str, *, announce: str, out: TextIO) -> None:
    """Serve ``server`` at ``http://127.0.0.1:{port}/mcp`` until interrupted, requiring ``token``;
    prints one line saying where, with ``announce`` (how clients get the credential). OSError
    when the port cannot be bound."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    bound = sock.getsockname()[1]
    app = BearerGuard(server.streamable_http_app(streamable_http_path=PATH, host=HOST), token)
    print(f"reach-otel mcp: streamable HTTP at http://{HOST}:{bound}{PATH}; {announce}", file=out)
    out.flush()
    # warning: uvicorn's access log would print every request line, and its path is the client's.
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()

"""The query token goes only to the collector's origin: the CLI and the MCP server's client, sent a
redirect to another origin (a second loopback server on another port), follow it without
``Authorization``, and keep it on a redirect within the origin."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import get_default_environment
from servers import ServerThread

TOKEN = "q-redirect-secret"
EMPTY = json.dumps({"traces": []}).encode()


class Recorder:
    """An ASGI app that answers ``/api/traces`` with a redirect to ``self.location`` (when set)
    and any other path with an empty search, recording each request's path and Authorization."""

    def __init__(self) -> None:
        self.location: str | None = None
        self.seen: list[tuple[str, str | None]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        headers = dict(scope["headers"])
        auth = headers.get(b"authorization")
        self.seen.append((scope["path"], auth.decode() if auth else None))
        if scope["path"] == "/api/traces" and self.location:
            moved = [(b"location", self.location.encode()), (b"content-length", b"0")]
            start = {"status": 302, "headers": moved}
            body = b""
        else:
            start = {"status": 200, "headers": [(b"content-type", b"application/json")]}
            body = EMPTY
        await send({"type": "http.response.start", **start})
        await send({"type": "http.response.body", "body": body})


@pytest.fixture
def servers() -> Iterator[tuple[ServerThread, Recorder, ServerThread, Recorder]]:
    home, elsewhere = Recorder(), Recorder()
    with ServerThread(home) as a, ServerThread(elsewhere) as b:
        yield a, home, b, elsewhere


def _cli(url: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_"))}
    env["REACH_QUERY_TOKEN"] = TOKEN
    args = [sys.executable, "-m", "reach_otel", "traces", "--url", url, "--json"]
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=60)


def _mcp_search(url: str) -> Any:
    async def run() -> Any:
        target = StdioServerParameters(
            command=sys.executable,
            args=["-m", "reach_otel", "mcp", "--url", url],
            env={**get_default_environment(), "REACH_QUERY_TOKEN": TOKEN},
        )
        async with Client(target) as client:
            return await client.call_tool("search_traces", {})

    return asyncio.run(run())


def _query(via: str, url: str) -> None:
    if via == "cli":
        done = _cli(url)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {"traces": []}
    else:
        result = _mcp_search(url)
        assert not result.is_error, result.content
        assert result.structured_content == {"traces": []}


@pytest.mark.parametrize("via", ["cli", "mcp"])
def test_a_redirect_to_another_origin_gets_no_token(
    servers: tuple[ServerThread, Recorder, ServerThread, Recorder], via: str
) -> None:
    a, home, b, elsewhere = servers
    home.location = f"{b.url}/api/traces?limit=20"
    _query(via, a.url)
    assert home.seen == [("/api/traces", f"Bearer {TOKEN}")]
    assert elsewhere.seen == [("/api/traces", None)]


@pytest.mark.parametrize("via", ["cli", "mcp"])
def test_a_redirect_within_the_origin_keeps_the_token(
    servers: tuple[ServerThread, Recorder, ServerThread, Recorder], via: str
) -> None:
    a, home, _, elsewhere = servers
    home.location = f"{a.url}/moved/api/traces"
    _query(via, a.url)
    assert home.seen == [("/api/traces", f"Bearer {TOKEN}"), ("/moved/api/traces", f"Bearer {TOKEN}")]
    assert elsewhere.seen == []


def test_the_same_host_on_another_port_or_scheme_is_another_origin() -> None:
    from reach_collector.cli.client import _origin

    assert _origin("http://127.0.0.1/x") == _origin("HTTP://127.0.0.1:80/y")
    assert _origin("http://127.0.0.1:4318/") != _origin("http://127.0.0.1:4319/")
    assert _origin("http://host:443/") != _origin("https://host/")
    assert _origin("http://localhost:4318/") != _origin("http://127.0.0.1:4318/")

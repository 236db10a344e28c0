"""`reach-otel mcp --http` has a credential of its own and keeps tokens off the command line: a
real server (over a collector with a query token, on loopback) refuses requests without its
bearer token, serves the tools with it, and its argv as `ps` shows it holds neither token;
`--token` on the command line is refused."""

from __future__ import annotations

import asyncio
import os
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from collector_process import CollectorProcess, free_port
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

QUERY_TOKEN = "q-mcp-http-secret"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CollectorProcess]:
    tmp = tmp_path_factory.mktemp("mcp-http-auth")
    config = tmp / "reach.yaml"
    config.write_text(f"auth: {{query_token: {QUERY_TOKEN}}}\n")
    with CollectorProcess(tmp / "traces.duckdb", "--config", str(config)) as running:
        yield running


def _search(url: str, credential: str) -> Any:
    """search_traces through the server at ``url``, sending ``credential``: its structured answer."""

    async def run() -> Any:
        http = httpx2.AsyncClient(headers={"authorization": f"Bearer {credential}"}, timeout=30)
        async with Client(streamable_http_client(url, http_client=http)) as client:
            result = await client.call_tool("search_traces", {})
        assert not result.is_error, result.content
        return result.structured_content

    return asyncio.run(run())


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_"))}
    return {**env, **extra}


class McpHttp:
    """``reach-otel mcp --http`` in a subprocess; ``line`` is the one line it prints at start."""

    def __init__(self, url: str, *extra: str, env: dict[str, str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        args = [sys.executable, "-m", "reach_otel", "mcp", "--url", url, "--http", "--port", str(self.port)]
        self.proc = subprocess.Popen(
            [*args, *extra], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        self.line = self._first_line()
        self._wait_listening()

    def _first_line(self) -> str:
        assert self.proc.stderr is not None
        ready, _, _ = select.select([self.proc.stderr], [], [], 30)
        assert ready, "the MCP server printed nothing"
        return self.proc.stderr.readline().strip()

    def _wait_listening(self) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"the MCP server exited: {self.line}"
            try:
                httpx.get(self.url, timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise AssertionError("the MCP HTTP server did not start")

    def argv(self) -> str:
        """The command line as another local user sees it."""
        shown = subprocess.run(["ps", "-ww", "-o", "args=", "-p", str(self.proc.pid)], capture_output=True)
        return shown.stdout.decode() + Path(f"/proc/{self.proc.pid}/cmdline").read_bytes().decode()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        if self.proc.stderr is not None:
            self.proc.stderr.close()


def _initialize(url: str, **headers: str) -> httpx.Response:
    return httpx.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **headers}, timeout=10)


def test_requests_without_its_credential_are_refused(collector: CollectorProcess) -> None:
    server = McpHttp(collector.url, env=_env(REACH_QUERY_TOKEN=QUERY_TOKEN))
    try:
        found = re.search(r'"Authorization: Bearer ([A-Za-z0-9_-]{40,})"', server.line)
        assert found, server.line
        credential = found.group(1)
        assert _initialize(server.url).status_code == 401
        assert _initialize(server.url, authorization="Bearer wrong").status_code == 401
        assert _initialize(server.url, authorization=f"Bearer {QUERY_TOKEN}").status_code == 401
        assert _initialize(server.url, authorization=f"Basic {credential}").status_code == 401
        refused = _initialize(server.url)
        assert refused.headers["www-authenticate"].startswith("Bearer")
        assert QUERY_TOKEN not in refused.text
        assert _initialize(server.url, authorization=f"Bearer {credential}").status_code == 200

        assert _search(server.url, credential) == {"traces": []}  # the query token reached the collector
        shown = server.argv()
        assert "reach_otel mcp" in shown
        assert QUERY_TOKEN not in shown and credential not in shown
    finally:
        server.stop()


def test_its_credential_can_be_chosen_by_variable_or_file(
    collector: CollectorProcess, tmp_path: Path
) -> None:
    by_env = McpHttp(collector.url, env=_env(REACH_QUERY_TOKEN=QUERY_TOKEN, REACH_MCP_TOKEN="mcp-chosen-1"))
    try:
        assert "mcp-chosen-1" not in by_env.line and "$REACH_MCP_TOKEN" in by_env.line
        assert _initialize(by_env.url).status_code == 401
        assert _initialize(by_env.url, authorization="Bearer mcp-chosen-1").status_code == 200
    finally:
        by_env.stop()
    query_file, credential_file = tmp_path / "query-token", tmp_path / "mcp-token"
    query_file.write_text(QUERY_TOKEN + "\n")
    credential_file.write_text("mcp-chosen-2\n")
    extra = ("--token-file", str(query_file), "--http-token-file", str(credential_file))
    by_file = McpHttp(collector.url, *extra, env=_env())
    try:
        assert "mcp-chosen-2" not in by_file.line
        assert _initialize(by_file.url, authorization="Bearer mcp-chosen-1").status_code == 401
        assert _search(by_file.url, "mcp-chosen-2") == {"traces": []}
        assert QUERY_TOKEN not in by_file.argv()
    finally:
        by_file.stop()


@pytest.mark.parametrize("mode", [(), ("--http",)])
def test_a_token_on_the_command_line_is_refused(mode: tuple[str, ...]) -> None:
    args = [sys.executable, "-m", "reach_otel", "mcp", "--token", QUERY_TOKEN, *mode]
    done = subprocess.run(args, env=_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    message = done.stderr.strip()
    assert message.startswith("reach-otel mcp: --token")
    assert "$REACH_QUERY_TOKEN" in message and "--token-file" in message
    assert QUERY_TOKEN not in message


def test_an_unreadable_token_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    args = [sys.executable, "-m", "reach_otel", "mcp", "--token-file", str(missing)]
    done = subprocess.run(args, env=_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith(f"reach-otel mcp: --token-file {missing}: cannot read it")

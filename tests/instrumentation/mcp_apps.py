"""MCP processes for test_mcp.py, each under ``reach_otel.init()`` (so the SDK's own tracing is live too).

    python mcp_apps.py serve stdio               # a tools server on stdin/stdout
    python mcp_apps.py serve http PORT           # the same tools over streamable HTTP (uvicorn)
    python mcp_apps.py call stdio|URL [MODE]     # a client turn: workflow > agents > handoff > tool calls
    python mcp_apps.py call-uninstrument URL [MODE]  # one call instrumented, one after uninstrument()

MODE is the client's ``mode``: ``auto`` (server/discover, the 2026 protocol) or ``legacy`` (the
initialize handshake, with a session id on streamable HTTP).

Spans go to ``OTEL_EXPORTER_OTLP_ENDPOINT``. A client prints one JSON line with what it saw.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from mcp import Client, MCPError, StdioServerParameters
from mcp.server.mcpserver import Context, MCPServer
from opentelemetry import trace

import reach_otel


def build_server() -> MCPServer:
    server = MCPServer("calc-tools")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    def fail(reason: str) -> str:
        """Always fails: the SDK answers with a result whose isError is true."""
        raise ValueError(reason)

    @server.tool()
    def forbidden() -> str:
        """Refuses with a JSON-RPC error."""
        raise MCPError(code=-32050, message="not allowed here")

    @server.tool()
    def echo_meta(ctx: Context) -> dict[str, Any]:
        """The request's ``_meta``, as the server received it."""
        return dict(ctx.request_context.meta or {})

    @server.tool()
    def delegate(query: str) -> str:
        """A tool run by an agent that hands off once more (hop state continues from the caller)."""

        @reach_otel.agent(name="ToolAgent")
        def run() -> str:
            with reach_otel.handoff("ToolAgent", "HelperAgent", reason="detail"):
                return f"done: {query}"

        return run()

    return server


def serve(transport: str, port: int | None = None) -> None:
    reach_otel.init(service_name=f"mcp-tools-{transport}")
    server = build_server()
    if transport == "stdio":
        server.run("stdio")
        return
    import uvicorn

    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=port or 0, log_level="warning")


def server_target(where: str) -> StdioServerParameters | str:
    if where == "stdio":
        return StdioServerParameters(command=sys.executable, args=[__file__, "serve", "stdio"])
    return where


def _trace_id() -> str:
    return format(trace.get_current_span().get_span_context().trace_id, "032x")


async def turn(where: str, mode: str = "auto") -> dict[str, Any]:
    seen: dict[str, Any] = {}

    @reach_otel.agent(name="CallerAgent")
    async def caller(client: Client) -> None:
        seen["add"] = (await client.call_tool("add", {"a": 2, "b": 3})).structured_content
        meta = await client.call_tool("echo_meta", {}, meta={"app.key": "kept", "progress": "n/a"})
        seen["meta"] = meta.structured_content
        seen["fail_is_error"] = (await client.call_tool("fail", {"reason": "no"})).is_error
        seen["delegate"] = (await client.call_tool("delegate", {"query": "q1"})).structured_content
        try:
            await client.call_tool("forbidden", {})
        except MCPError as exc:
            seen["forbidden"] = [exc.code, exc.message]

    @reach_otel.agent(name="PlannerAgent")
    async def planner(client: Client) -> None:
        with reach_otel.handoff("PlannerAgent", "CallerAgent", reason="tools"):
            await caller(client)

    @reach_otel.workflow(name="mcp_turn")
    async def run() -> None:
        seen["trace_id"] = _trace_id()
        with reach_otel.session(session_id="SESS-MCP", user_id="U-7", task_id="T-3"):
            async with Client(server_target(where), mode=mode) as client:  # type: ignore[arg-type]
                await planner(client)

    await run()
    return seen


async def uninstrument_round(where: str, mode: str = "auto") -> dict[str, Any]:
    seen: dict[str, Any] = {}
    async with Client(server_target(where), mode=mode) as client:  # type: ignore[arg-type]
        seen["first"] = (await client.call_tool("add", {"a": 1, "b": 1})).structured_content
        seen["removed"] = reach_otel.uninstrument("mcp")
        seen["second"] = (await client.call_tool("add", {"a": 2, "b": 2})).structured_content
    return seen


def main(argv: list[str]) -> None:
    if argv[0] == "serve":
        serve(argv[1], int(argv[2]) if len(argv) > 2 else None)
        return
    reach_otel.init(service_name="mcp-agent")
    body = turn(*argv[1:3]) if argv[0] == "call" else uninstrument_round(*argv[1:3])
    print(json.dumps(asyncio.run(body)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

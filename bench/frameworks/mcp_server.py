"""The MCP tools server the MCP app calls over stdio, traced by the tracer named in ``BENCH_TRACER``.

    BENCH_TRACER=reach python mcp_server.py

Tools: ``add`` (the measured call), ``cpu`` (this process's CPU seconds, so the client can charge
the server's side of each call to the tracer), ``keep`` / ``take`` (collect this side's spans of a
probe: their names, trace ids and parents, as :mod:`tracing` records them). Runs on the MCP SDK
2.x (``MCPServer``) or 1.x (``FastMCP``), whichever the environment has.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

import tracing
from opentelemetry import trace

provider, capture, failed = tracing.setup(os.environ.get("BENCH_TRACER", "none"), "mcp")

if TYPE_CHECKING:  # checked against the 2.x SDK, the one installed beside the project
    from mcp.server.mcpserver import MCPServer as Server
else:
    try:
        from mcp.server.mcpserver import MCPServer as Server
    except ImportError:  # the 1.x SDK
        from mcp.server.fastmcp import FastMCP as Server

server = Server("calc-tools")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two numbers, in a span of the tool's own (as a tool's model call or query would make one)."""
    with trace.get_tracer("bench.tool").start_as_current_span("add numbers"):
        return a + b


@server.tool()
def cpu() -> float:
    """This process's CPU seconds so far."""
    return time.process_time()


@server.tool()
def keep() -> str:
    """Start keeping this side's spans."""
    if provider is not None and capture is not None:
        provider.force_flush()
        capture.keep()
    return "kept"


@server.tool()
def take() -> dict[str, Any]:
    """The spans kept since ``keep`` (the ``take`` call's own span is still open, so not among them)."""
    if provider is None or capture is None:
        return {"spans": [], "instrument_error": failed}
    provider.force_flush()
    spans = [
        {"name": s["name"], "trace_id": s["trace_id"], "parent_id": s["parent_id"], "links": s["links"]}
        for s in capture.take()
    ]
    return {"spans": spans, "instrument_error": failed}


if __name__ == "__main__":
    server.run("stdio")

"""`reach-otel mcp [--http --port N]`: an MCP server for AI assistants over a running collector's
API (the tools live in reach_collector.assistant), on stdio by default or streamable HTTP on
127.0.0.1. The mcp SDK is imported only when the command runs."""

from __future__ import annotations

import argparse

from reach_collector.cli.client import DEFAULT_URL, fail

__all__ = ["register", "run_mcp"]


def run_mcp(args: argparse.Namespace) -> int:
    try:
        from reach_collector.assistant import build_server
    except ImportError as exc:
        return fail(args, f"needs the mcp SDK: pip install 'reach-otel[mcp]' ({exc})")
    server = build_server(args.url, args.token)
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.port)
    else:
        server.run("stdio")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `mcp` to the `reach-otel` command line."""
    mcp = sub.add_parser(
        "mcp", help="an MCP server over the collector's API, so an AI assistant can debug your agents"
    )
    mcp.add_argument("--url", default=None, help=f"collector URL (default $REACH_OTEL_URL or {DEFAULT_URL})")
    mcp.add_argument("--token", default=None, help="query token (default $REACH_QUERY_TOKEN)")
    mcp.add_argument("--http", action="store_true", help="serve streamable HTTP on 127.0.0.1 (default stdio)")
    mcp.add_argument("--port", type=int, default=8765, help="port for --http (default 8765; path /mcp)")
    mcp.set_defaults(func=run_mcp, cli_name="mcp")

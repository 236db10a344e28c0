"""`reach-otel mcp [--http --port N]`: an MCP server for AI assistants over a running collector's
API (the tools live in reach_collector.cli.assistant), on stdio by default or streamable HTTP on
127.0.0.1 behind a credential of its own (reach_collector.cli.assistant_http). The collector's query
token comes from ``$REACH_QUERY_TOKEN`` or ``--token-file``, never the command line, which every
local user can read for as long as the server runs. The mcp SDK is imported only when the command
runs."""

from __future__ import annotations

import argparse
import logging
import sys

from reach_collector.cli.client import DEFAULT_URL, TOKEN_ENV, QueryError, fail, read_token_file

__all__ = ["register", "run_mcp"]

_NO_ARGV_TOKEN = (
    "--token would put the query token on the command line, where every local user can read it "
    f"for as long as the server runs: set ${TOKEN_ENV} or pass --token-file PATH"
)


def run_mcp(args: argparse.Namespace) -> int:
    if args.token is not None:
        return fail(args, _NO_ARGV_TOKEN, 2)
    try:
        token = read_token_file(args.token_file) if args.token_file else None
    except QueryError as exc:
        return fail(args, str(exc), exc.code)
    try:
        from reach_collector.cli.assistant import build_server
        from reach_collector.cli.assistant_http import CREDENTIAL_ENV, credential, serve_http
    except ImportError as exc:
        return fail(args, f"needs the mcp SDK: pip install 'reach-otel[mcp]' ({exc})")
    from reach_collector.text.printable import OneLineRecords

    server = build_server(args.url, token)
    for handler in logging.getLogger().handlers:  # the SDK logs tool failures, whose text is a peer's
        handler.addFilter(OneLineRecords())
    if not args.http:
        server.run("stdio")
        return 0
    try:
        secret, generated = credential(args.http_token_file)
    except QueryError as exc:
        return fail(args, str(exc), exc.code)
    if generated:
        announce = (
            f'clients send "Authorization: Bearer {secret}" (made up for this run; '
            f"set ${CREDENTIAL_ENV} or pass --http-token-file to choose one)"
        )
    else:
        where = f"--http-token-file {args.http_token_file}" if args.http_token_file else f"${CREDENTIAL_ENV}"
        announce = f'clients send "Authorization: Bearer <the token in {where}>"'
    try:
        serve_http(server, args.port, secret, announce=announce, out=sys.stderr)
    except OSError as exc:
        return fail(args, f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `mcp` to the `reach-otel` command line."""
    mcp = sub.add_parser(
        "mcp", help="an MCP server over the collector's API, so an AI assistant can debug your agents"
    )
    mcp.add_argument("--url", default=None, help=f"collector URL (default $REACH_OTEL_URL or {DEFAULT_URL})")
    mcp.add_argument(
        "--token-file",
        default=None,
        metavar="PATH",
        help=f"read the collector's query token from PATH (default ${TOKEN_ENV})",
    )
    mcp.add_argument("--token", default=None, help=argparse.SUPPRESS)  # refused, saying what to use
    mcp.add_argument("--http", action="store_true", help="serve streamable HTTP on 127.0.0.1 (default stdio)")
    mcp.add_argument("--port", type=int, default=8765, help="port for --http (default 8765; path /mcp)")
    mcp.add_argument(
        "--http-token-file",
        default=None,
        metavar="PATH",
        help="with --http: the bearer token clients must send, read from PATH (default "
        "$REACH_MCP_TOKEN, else one made up at start and printed)",
    )
    mcp.set_defaults(func=run_mcp, cli_name="mcp")

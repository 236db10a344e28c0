"""`reach-otel trace TRACE_ID` (the span tree) and `reach-otel traces` (a search, as a table): thin
clients of a running collector's trace API. rich is imported only when a command prints."""

from __future__ import annotations

import argparse
import re
from typing import Any

from reach_collector.cli.client import (
    UsageError,
    add_query_arguments,
    call,
    display_zone,
    limit_arg,
    print_json,
    query_command,
    requested_zone,
)

_TRACE_ID = re.compile(r"^[0-9a-fA-F]{32}$")


@query_command
def run_trace(args: argparse.Namespace) -> int:
    if not _TRACE_ID.match(args.trace_id) or int(args.trace_id, 16) == 0:
        raise UsageError(f"malformed trace id {args.trace_id!r}: expected 32 hex digits")
    requested_zone(args)  # a bad --tz fails before the query
    trace = call(args, f"/api/traces/{args.trace_id.lower()}")
    if not print_json(args, trace):
        from reach_collector.cli.render import print_tree

        print_tree(trace, zone=display_zone(args))
    return 0


@query_command
def run_traces(args: argparse.Namespace) -> int:
    params: list[tuple[str, str]] = [("limit", str(args.limit))]
    for name in ("service", "agent", "since", "until"):
        value = getattr(args, name)
        if value:
            params.append((name, value))
    if args.errors:
        params.append(("status", "error"))
    if args.min_duration_ms is not None:
        params.append(("min_duration_ms", str(args.min_duration_ms)))
    for item in args.attr or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--attr expects KEY=VALUE, got {item!r}")
        params.append((f"attr.{key}", value))
    requested_zone(args)
    body: dict[str, Any] = call(args, "/api/traces", params=params)
    if not print_json(args, body):
        from reach_collector.cli.render import print_traces

        print_traces(body["traces"], display_zone(args))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `trace` and `traces` to the `reach-otel` command line."""
    trace = sub.add_parser("trace", help="print one trace as a span tree")
    trace.add_argument("trace_id", metavar="TRACE_ID", help="32 hex digits")
    add_query_arguments(trace, "a rendering")
    trace.set_defaults(func=run_trace, cli_name="trace")

    traces = sub.add_parser("traces", help="search traces")
    traces.add_argument("--service", help="traces with a span from this service")
    traces.add_argument("--agent", help="traces in which this agent ran")
    traces.add_argument("--errors", action="store_true", help="only traces with an ERROR span")
    traces.add_argument("--since", help="ISO-8601, unix ns, or a lookback like 15m")
    traces.add_argument("--until", help="ISO-8601 or unix ns")
    traces.add_argument("--min-duration-ms", type=float, default=None, help="slower than this")
    traces.add_argument("--attr", action="append", metavar="KEY=VALUE", help="a span attribute (repeatable)")
    traces.add_argument("--limit", type=limit_arg, default=20, help="at most this many (1 to 1000)")
    add_query_arguments(traces, "a rendering")
    traces.set_defaults(func=run_traces, cli_name="traces")

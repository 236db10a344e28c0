"""`reach-otel why TRACE_ID` (where one failed trace's failure began, the path to it, what it
affected and wasted) and `reach-otel why [--window 15m] [--agent X] [--service S]` (a window's
failed traces ranked by cause): thin clients of `/api/traces/{id}/cause` and `/api/causes`
(SPEC §17). rich is imported only when a command prints."""

from __future__ import annotations

import argparse
import re
from typing import Any

from reach_collector.cli.client import UsageError, add_query_arguments, call, print_json, query_command
from reach_collector.cli.formats import duration, usd
from reach_collector.text.durations import format_duration_s
from reach_collector.text.printable import error_name

__all__ = ["print_cause", "print_causes", "register", "run_why"]

_TRACE_ID = re.compile(r"^[0-9a-fA-F]{32}$")


def _kind(origin: dict[str, Any]) -> str:
    error = f" ({error_name(origin['error_type'])})" if origin.get("error_type") else ""
    return f"{origin['kind']} {origin.get('name') or '?'}{error}"


def _tokens(wasted: dict[str, Any]) -> str:
    return f"{wasted['input_tokens']}→{wasted['output_tokens']} tokens"


def print_cause(body: dict[str, Any]) -> None:
    from rich.text import Text

    from reach_collector.cli.render import console

    out = console()
    if not body["failed"]:
        out.print(f"trace {body['trace_id']} did not fail (its root span is not ERROR)")
        return
    origin = body["origin"]
    out.print(Text(f"trace {body['trace_id']} failed", style="bold"))
    line = Text("origin  ")
    line.append(_kind(origin), style="bold red")
    line.append(f"  in {origin.get('agent') or '?'}", style="cyan")
    out.print(line)
    if origin.get("message"):
        out.print(Text(f"        {origin['message']}", style="red"))
    out.print(Text(f"        span {origin['span_id']}", style="dim"))
    names = body.get("path_names") or body["path"]
    out.print(Text("path"))
    for depth, name in enumerate(names):
        out.print(Text(f"  {'  ' * depth}{'└ ' if depth else ''}{name}"))
    if body.get("upstream"):
        out.print(f"upstream  {', '.join(body['upstream'])}")
    out.print(f"affected  {', '.join(body['affected_agents']) or '-'}")
    if body.get("never_ran"):
        out.print(Text(f"never ran {', '.join(body['never_ran'])}", style="yellow"))
    wasted = body["wasted"]
    out.print(f"wasted    {_tokens(wasted)}, {usd(wasted['cost_usd'])}, {duration(wasted['duration_ms'])}")


def print_causes(body: dict[str, Any]) -> None:
    from rich.text import Text

    from reach_collector.cli.render import Col, console, fit_table, stacked

    out = console()
    window = format_duration_s(float(body["window_s"]), exact=False)
    who = "".join(f" {k}={body[k]}" for k in ("agent", "service") if body.get(k))
    if not body["causes"]:
        out.print(f"no failed traces{who} in the last {window}")
        return
    sampled = f" (the newest {body['max_traces']}: sampled)" if body.get("sampled") else ""
    out.print(
        Text(f"Causes of {body['failed_traces']} failed traces{who}, last {window}{sampled}", style="bold")
    )
    if body.get("summary"):
        out.print(Text(body["summary"]))
    rows = []
    for c in body["causes"]:
        kind = c["kind"] + (f" · {error_name(c['error_type'])}" if c.get("error_type") else "")
        agent = c.get("agent") or "?"
        upstream = ", ".join(c.get("upstream") or [])
        rows.append(
            [
                str(c["traces"]),
                f"{round(c['share'] * 100)}%",
                stacked(agent, f"←{upstream}") if upstream else agent,
                stacked(c.get("name") or "?", kind),
                "\n".join(f"{n['agent']} ×{n['traces']}" for n in c.get("never_ran") or []) or "-",
                usd(c["wasted_cost_usd"]),
            ]
        )
    # Two lines a row: the agent over who handed off into it (←), the name over the kind and error.
    columns = [
        Col("traces", whole=True, justify="right"),
        Col("share", whole=True, justify="right"),
        Col("agent", floor=10, style="cyan"),
        Col("cause", floor=28),  # a tool or model name and its error type read whole
        Col("never ran", floor=10, drop=1),
        Col("wasted", whole=True, justify="right", drop=2),
    ]
    out.print(fit_table(columns, rows, out.width))
    top = body["causes"][0]["example_trace_ids"]
    out.print(Text("examples of the top cause (reach-otel why TRACE_ID):", style="dim"))
    for trace_id in top:
        out.print(f"  {trace_id}")


@query_command
def run_why(args: argparse.Namespace) -> int:
    if args.trace_id is not None:
        if not _TRACE_ID.match(args.trace_id) or int(args.trace_id, 16) == 0:
            raise UsageError(f"malformed trace id {args.trace_id!r}: expected 32 hex digits")
        if args.window or args.agent or args.service:
            raise UsageError("give a TRACE_ID or --window/--agent/--service, not both")
        body = call(args, f"/api/traces/{args.trace_id.lower()}/cause")
        if not print_json(args, body):
            print_cause(body)
        return 0
    params = [("window", args.window or "15m")]
    params += [(k, getattr(args, k)) for k in ("agent", "service") if getattr(args, k) is not None]
    body = call(args, "/api/causes", params=params)
    if not print_json(args, body):
        print_causes(body)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `why` to the `reach-otel` command line."""
    parser = sub.add_parser(
        "why", help="where a failed trace's failure began, or a window's failed traces ranked by cause"
    )
    parser.add_argument("trace_id", metavar="TRACE_ID", nargs="?", default=None, help="32 hex digits")
    parser.add_argument("--window", default=None, help="trailing window: 30s, 5m, 1h, 7d (default 15m)")
    parser.add_argument("--agent", default=None, help="only failed traces whose path has this agent")
    parser.add_argument("--service", default=None, help="only failed traces whose path has this service.name")
    add_query_arguments(parser, "a rendering")
    parser.set_defaults(func=run_why, cli_name="why")

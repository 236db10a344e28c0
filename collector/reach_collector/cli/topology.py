"""`reach-otel topology [--window 1h] [--service S]`: the agent topology of a running collector, from
its `/api/topology` — the agents (calls, errors, p95, tokens, cost) and the handoffs between them
(outcomes, inferred, p95, loops), as two tables fitted to the terminal (80 columns when piped)."""

from __future__ import annotations

import argparse
from datetime import tzinfo
from typing import Any

from reach_collector.cli.client import (
    add_query_arguments,
    call,
    display_zone,
    print_json,
    query_command,
    requested_zone,
)
from reach_collector.cli.formats import duration, usd
from reach_collector.text.durations import format_duration_s

__all__ = ["print_topology", "register", "run_topology"]


def _name(agent: str | None) -> str:
    return "?" if agent is None else str(agent)


def print_topology(body: dict[str, Any], zone: tzinfo) -> None:
    from rich.text import Text

    from reach_collector.cli.render import Col, console, fit_table, stacked, zone_heading

    out = console()
    window = format_duration_s(float(body["window_s"]), exact=False)
    where = f" in {body['service']}" if body.get("service") else ""
    if not body["nodes"]:
        out.print(f"no agents{where} in the last {window}")
        return
    out.print(zone_heading(f"Agent topology{where}, last {window}", zone, body["until"]))
    agents = [
        [
            _name(n["agent"]),
            str(n["calls"]),
            str(n["errors"]),
            duration(n["p95_ms"]),
            str(n["input_tokens"]),
            str(n["output_tokens"]),
            usd(n["cost_usd"]),
        ]
        for n in body["nodes"]
    ]
    columns = [
        Col("agent", floor=12, style="cyan"),
        *(Col(h, whole=True, justify="right") for h in ("calls", "errors", "p95")),
        Col("tokens in", whole=True, justify="right", drop=2),
        Col("out", whole=True, justify="right", drop=2),
        Col("cost", whole=True, justify="right", drop=1),
    ]
    out.print(
        fit_table(
            columns, agents, out.width, row_styles=["red" if n["errors"] else None for n in body["nodes"]]
        )
    )
    out.print()
    if not body["edges"]:
        out.print(f"no handoffs{where} in the last {window}")
        return
    out.print(Text("Handoffs (source → target, mode)", style="bold"))
    rows: list[list[str | Text]] = []
    for e in body["edges"]:
        edge = Text(f"{_name(e['source'])} → {_name(e['target'])}", style="cyan")
        rows.append(
            [
                stacked(edge, Text(f"  {e['mode']}", style="dim")) if e.get("mode") else edge,
                str(e["handoffs"]),
                str(e["committed"]),
                str(e["rejected"]),
                str(e["failed"]),
                str(e["unknown"]),
                str(e["inferred"]),
                duration(e["p95_ms"]),
                str(e["loops"]),
            ]
        )
    # An edge folds only past 32 columns: before that, the low-value counts make room.
    longest = max(len(f"{_name(e['source'])} → {_name(e['target'])}") for e in body["edges"])
    columns = [
        Col("edge, mode", floor=min(max(longest, 4), 32)),
        Col("handoffs", whole=True, justify="right"),
        Col("committed", whole=True, justify="right"),
        Col("rejected", whole=True, justify="right", drop=1),
        Col("failed", whole=True, justify="right"),
        Col("unknown", whole=True, justify="right"),
        Col("inferred", whole=True, justify="right", drop=2),
        Col("p95", whole=True, justify="right"),
        Col("loops", whole=True, justify="right", drop=3),
    ]
    bad = ["red" if e["failed"] or e["rejected"] or e["unknown"] else None for e in body["edges"]]
    out.print(fit_table(columns, rows, out.width, row_styles=bad))


@query_command
def run_topology(args: argparse.Namespace) -> int:
    requested_zone(args)
    params = [("window", args.window)] + ([("service", args.service)] if args.service else [])
    body: dict[str, Any] = call(args, "/api/topology", params=params)
    if not print_json(args, body):
        print_topology(body, display_zone(args))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `topology` to the `reach-otel` command line."""
    parser = sub.add_parser("topology", help="agents and the handoffs between them (outcomes, p95, loops)")
    parser.add_argument("--window", default="1h", help="trailing window: 30s, 5m, 1h, 7d (default 1h)")
    parser.add_argument("--service", default=None, help="only the spans of this service.name")
    add_query_arguments(parser, "tables")
    parser.set_defaults(func=run_topology, cli_name="topology")

"""`reach-otel metrics [--window 5m] [--by agent] [--agents]`: golden or multi-agent metrics as
tables, read from a running collector over HTTP (stdlib client)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from reach_collector.cli.client import QueryError, add_query_arguments, default_url, get_json

__all__ = ["register", "run_metrics"]

_BY = ("agent", "tool", "model", "operation", "service")


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value / 1000:.2f}s" if value >= 1000 else f"{value:.1f}ms"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _usd(value: float | None) -> str:
    return "unpriced" if value is None else f"${value:.4f}"


def print_golden(body: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Golden metrics by {body['by']} — last {body['window_s']}s until {body['until']}")
    table.add_column(body["by"], style="cyan")
    for name in ("calls", "ok", "errors", "success", "ok/min", "p50", "p95", "p99"):
        table.add_column(name, justify="right")
    for g in body["groups"]:
        _golden_row(table, g)
    console = Console()
    if body["groups"]:
        table.add_section()
        _golden_row(table, {**body["total"], "key": "all"})
        console.print(table)
    else:
        console.print(f"no {body['by']} calls in the last {body['window_s']}s")


def _golden_row(table: Any, g: dict[str, Any]) -> None:
    rate = g["success_rate"]
    table.add_row(
        "(none)" if g["key"] is None else str(g["key"]),
        str(g["calls"]),
        str(g["ok"]),
        str(g["errors"]),
        _pct(rate),
        _num(g["throughput_per_min"]),
        _ms(g["p50_ms"]),
        _ms(g["p95_ms"]),
        _ms(g["p99_ms"]),
        style="red" if rate is not None and rate < 0.5 else None,
    )


def print_agents(body: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    h, hops, loops = body["handoffs"], body["hops"], body["loops"]
    summary = Table(title=f"Multi-agent metrics — last {body['window_s']}s until {body['until']}")
    summary.add_column("metric", style="cyan")
    summary.add_column("value", justify="right")
    for name, value in (
        ("handoffs", str(h["total"])),
        ("committed", str(h["committed"])),
        ("handoff efficiency", _pct(h["efficiency"])),
        ("acceptance rate", _pct(h["acceptance_rate"])),
        ("commit rate", _pct(h["commit_rate"])),
        ("unknown rate", _pct(h["unknown_rate"])),
        ("escalation rate", _pct(h["escalation_rate"])),
        ("requests (traces)", str(hops["traces"])),
        ("hops p50 / p95 / p99", " / ".join(_num(hops[k], 1) for k in ("p50", "p95", "p99"))),
        ("requests within 2 hops", _pct(hops["share_le_2"])),
        ("requests with a loop", f"{loops['traces_with_loop']} ({_pct(loops['rate'])})"),
    ):
        summary.add_row(name, value)
    console.print(summary)
    tokens = Table(title="Tokens and cost per agent")
    tokens.add_column("agent", style="cyan")
    for name in ("input", "output", "share", "cost"):
        tokens.add_column(name, justify="right")
    for a in body["agents"]:
        tokens.add_row(
            str(a["agent"]),
            str(a["input_tokens"]),
            str(a["output_tokens"]),
            _pct(a["token_share"]),
            _usd(a["cost_usd"]),
        )
    console.print(tokens)


def run_metrics(args: argparse.Namespace) -> int:
    url = args.url or default_url()
    path = "/api/metrics/agents" if args.agents else "/api/metrics/golden"
    params = [("window", args.window)] if args.agents else [("window", args.window), ("by", args.by)]
    try:
        body: dict[str, Any] = get_json(url, path, params, token=args.token)
    except QueryError as exc:
        print(f"reach-otel metrics: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(body, indent=2))
    elif args.agents:
        print_agents(body)
    else:
        print_golden(body)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `metrics` to the `reach-otel` command line."""
    parser = sub.add_parser("metrics", help="golden metrics per agent/tool/model, or multi-agent metrics")
    parser.add_argument("--window", default="5m", help="trailing window: 30s, 5m, 1h, 7d (default 5m)")
    parser.add_argument("--by", default="agent", choices=_BY, help="group calls by (default agent)")
    parser.add_argument("--agents", action="store_true", help="handoffs, hops, loops, tokens and cost")
    add_query_arguments(parser, "tables")
    parser.set_defaults(func=run_metrics)

"""`reach-otel metrics [--window 5m] [--by agent] [--agents]`: golden or multi-agent metrics as
tables fitted to the terminal, read from a running collector over HTTP (stdlib client)."""

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

__all__ = ["print_agents", "print_golden", "register", "run_metrics"]

_BY = ("agent", "tool", "model", "operation", "service")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _golden_row(g: dict[str, Any]) -> list[str]:
    return [
        "(none)" if g["key"] is None else str(g["key"]),
        str(g["calls"]),
        str(g["ok"]),
        str(g["errors"]),
        _pct(g["success_rate"]),
        _num(g["throughput_per_min"]),
        duration(g["p50_ms"]),
        duration(g["p95_ms"]),
        duration(g["p99_ms"]),
    ]


def print_golden(body: dict[str, Any], zone: tzinfo) -> None:
    from reach_collector.cli.render import Col, console, fit_table, zone_heading

    out = console()
    window = format_duration_s(float(body["window_s"]), exact=False)
    if not body["groups"]:
        out.print(f"no {body['by']} calls in the last {window}")
        return
    groups = [*body["groups"], {**body["total"], "key": "all"}]
    rows = [_golden_row(g) for g in groups]
    low = [g["success_rate"] is not None and g["success_rate"] < 0.5 for g in groups]
    columns = [
        Col(body["by"], floor=12, style="cyan"),
        *(Col(name, whole=True, justify="right") for name in ("calls", "ok", "errors", "success")),
        Col("ok/min", whole=True, justify="right"),
        *(Col(name, whole=True, justify="right") for name in ("p50", "p95", "p99")),
    ]
    out.print(zone_heading(f"Golden metrics by {body['by']}, last {window}", zone, body["until"]))
    table = fit_table(
        columns,
        rows,
        out.width,
        row_styles=["red" if bad else None for bad in low],
        section_before=len(rows) - 1,
    )
    out.print(table)


def print_agents(body: dict[str, Any], zone: tzinfo) -> None:
    from reach_collector.cli.render import Col, console, fit_table, zone_heading

    out = console()
    h, hops, loops = body["handoffs"], body["hops"], body["loops"]
    window = format_duration_s(float(body["window_s"]), exact=False)
    out.print(zone_heading(f"Multi-agent metrics, last {window}", zone, body["until"]))
    summary = [
        ["handoffs", str(h["total"])],
        ["committed", str(h["committed"])],
        ["handoff efficiency", _pct(h["efficiency"])],
        ["acceptance rate", _pct(h["acceptance_rate"])],
        ["commit rate", _pct(h["commit_rate"])],
        ["unknown rate", _pct(h["unknown_rate"])],
        ["escalation rate", _pct(h["escalation_rate"])],
        ["requests (traces)", str(hops["traces"])],
        ["hops p50 / p95 / p99", " / ".join(_num(hops[k], 1) for k in ("p50", "p95", "p99"))],
        ["requests within 2 hops", _pct(hops["share_le_2"])],
        ["requests with a loop", f"{loops['traces_with_loop']} ({_pct(loops['rate'])})"],
    ]
    columns = [Col("metric", floor=12, style="cyan"), Col("value", whole=True, justify="right")]
    out.print(fit_table(columns, summary, out.width))
    out.print()
    out.print("Tokens and cost per agent", style="bold")
    if not body["agents"]:
        out.print(f"no agent tokens in the last {window}")
        return
    tokens = [
        [
            str(a["agent"]),
            str(a["input_tokens"]),
            str(a["output_tokens"]),
            _pct(a["token_share"]),
            usd(a["cost_usd"]),
        ]
        for a in body["agents"]
    ]
    columns = [
        Col("agent", floor=12, style="cyan"),
        *(Col(name, whole=True, justify="right") for name in ("input", "output", "share", "cost")),
    ]
    out.print(fit_table(columns, tokens, out.width))


@query_command
def run_metrics(args: argparse.Namespace) -> int:
    path = "/api/metrics/agents" if args.agents else "/api/metrics/golden"
    params = [("window", args.window)] if args.agents else [("window", args.window), ("by", args.by)]
    requested_zone(args)
    body: dict[str, Any] = call(args, path, params=params)
    if print_json(args, body):
        return 0
    zone = display_zone(args)
    if args.agents:
        print_agents(body, zone)
    else:
        print_golden(body, zone)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `metrics` to the `reach-otel` command line."""
    parser = sub.add_parser("metrics", help="golden metrics per agent/tool/model, or multi-agent metrics")
    parser.add_argument("--window", default="5m", help="trailing window: 30s, 5m, 1h, 7d (default 5m)")
    parser.add_argument("--by", default="agent", choices=_BY, help="group calls by (default agent)")
    parser.add_argument("--agents", action="store_true", help="handoffs, hops, loops, tokens and cost")
    add_query_arguments(parser, "tables")
    parser.set_defaults(func=run_metrics, cli_name="metrics")

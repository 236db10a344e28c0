"""`reach-otel oncall [--at TIME]`: who is on call in each schedule (and why: a layer or an override),
and the next hand-off, from a running collector's `/api/oncall`; times in the display zone."""

from __future__ import annotations

import argparse
from typing import Any

from reach_collector.cli.client import (
    add_query_arguments,
    call,
    display_zone,
    print_json,
    query_command,
    requested_zone,
)
from reach_collector.cli.formats import when

__all__ = ["register", "run_oncall"]


def _reason(schedule: dict[str, Any]) -> str:
    reason = schedule.get("reason")
    if reason is None:
        return ""
    return "override" if reason == "override" else f"layer {reason}"


@query_command
def run_oncall(args: argparse.Namespace) -> int:
    requested_zone(args)
    body = call(args, "/api/oncall", params=[("at", args.at)] if args.at else None)
    if not print_json(args, body):
        from reach_collector.cli.render import Col, print_table, zone_heading

        configured = body.get("time_zone")
        zone = display_zone(args, configured if isinstance(configured, str) else None)
        rows = [
            [
                s["schedule"],
                s.get("now") or "(nobody)",
                _reason(s),
                s.get("next") or "",
                when(s.get("next_handoff"), zone),
            ]
            for s in body["schedules"]
        ]
        columns = [
            Col("schedule", floor=10),
            Col("on call", floor=8),
            Col("why", floor=8),
            Col("next", floor=8),
            Col("hand-off", whole=True),
        ]
        at = when(body.get("at"), zone)
        title = f"On call at {at}" if args.at else f"On call now ({at})" if at else "On call"
        print_table(zone_heading(title, zone), columns, rows, "no schedules configured")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `oncall` to the `reach-otel` command line."""
    oncall = sub.add_parser("oncall", help="who is on call now (or --at a time), and the next hand-off")
    oncall.add_argument("--at", default=None, help="preview another time (ISO-8601, e.g. 2026-02-01T10:00Z)")
    add_query_arguments(oncall)
    oncall.set_defaults(func=run_oncall, cli_name="oncall")

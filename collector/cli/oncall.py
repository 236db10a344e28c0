"""`reach-otel oncall [--at TIME]`: who is on call in each schedule (and why: a layer or an override),
and the next hand-off, from a running collector's `/api/oncall`."""

from __future__ import annotations

import argparse
from typing import Any

from reach_collector.cli.client import QueryError, add_query_arguments, call, fail, print_json

__all__ = ["register", "run_oncall"]


def _reason(schedule: dict[str, Any]) -> str:
    reason = schedule.get("reason")
    if reason is None:
        return ""
    return "override" if reason == "override" else f"layer {reason}"


def run_oncall(args: argparse.Namespace) -> int:
    try:
        body = call(args, "/api/oncall", params=[("at", args.at)] if args.at else None)
    except QueryError as exc:
        return fail(str(exc))
    if not print_json(args, body):
        from reach_collector.cli.render import print_table

        rows = [
            [
                s["schedule"],
                s.get("now") or "(nobody)",
                _reason(s),
                s.get("next") or "",
                s.get("next_handoff") or "",
            ]
            for s in body["schedules"]
        ]
        title = f"On call at {args.at}" if args.at else "On call"
        print_table(
            title, ["schedule", "on call", "why", "next", "hand-off"], rows, "no schedules configured"
        )
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `oncall` to the `reach-otel` command line."""
    oncall = sub.add_parser("oncall", help="who is on call now (or --at a time), and the next hand-off")
    oncall.add_argument("--at", default=None, help="preview another time (ISO-8601, e.g. 2026-02-01T10:00Z)")
    add_query_arguments(oncall)
    oncall.set_defaults(func=run_oncall)

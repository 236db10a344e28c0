"""`reach-otel alerts [replay|ack]`, `reach-otel oncall`, `reach-otel agents`: thin clients of a
running collector's alerting API (stdlib HTTP), printed as tables. Exit 1 when the collector is
unreachable or answers 4xx/5xx, 2 for a bad argument."""

from __future__ import annotations

import argparse
import json
import time
from datetime import datetime, timezone
from typing import Any

from reach_collector.client import QueryError, add_query_arguments, default_url, fail, get_json, post_json

__all__ = ["register", "run_agents", "run_alerts", "run_oncall"]


def _table(title: str, columns: list[str], rows: list[list[str]], empty: str) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not rows:
        console.print(empty)
        return
    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    console.print(table)


def _call(args: argparse.Namespace, path: str, body: Any = None, params: Any = None) -> Any:
    url = args.url or default_url()
    if body is None:
        return get_json(url, path, params, token=args.token)
    return post_json(url, path, body, token=args.token)


def _print(args: argparse.Namespace, body: Any) -> bool:
    if args.json:
        print(json.dumps(body, indent=2))
    return bool(args.json)


def _instant(value: str, name: str) -> str:
    """ISO-8601 and unix ns pass through; a lookback like ``30m`` means that long before now."""
    from reach_collector.config import ConfigError, parse_duration

    if value.strip().isdigit() or "T" in value or "-" in value:
        return value
    try:
        seconds = parse_duration(value, name)
    except ConfigError as exc:
        raise ValueError(f"{exc} (or an ISO-8601 time, or unix nanoseconds)") from None
    return datetime.fromtimestamp(time.time() - seconds, timezone.utc).isoformat()


def run_alerts(args: argparse.Namespace) -> int:
    params = [("state", args.state)] if args.state else None
    try:
        body = _call(args, "/api/alerts", params=params)
    except QueryError as exc:
        return fail(str(exc))
    if not _print(args, body):
        rows = [
            [
                a["severity"],
                a["alertname"],
                a["labels"].get("agent", ""),
                a["state"],
                a.get("active_at") or "",
                a.get("fired_at") or "",
                a.get("resolved_at") or "",
                a.get("acknowledged_by") or "",
                a["fingerprint"],
            ]
            for a in body["alerts"]
        ]
        columns = ["sev", "alert", "agent", "state", "active", "fired", "resolved", "acked by", "fingerprint"]
        _table("Alerts", columns, rows, "no alerts")
    return 0


def run_replay(args: argparse.Namespace) -> int:
    try:
        request: dict[str, Any] = {
            "since": _instant(args.since, "--since"),
            "until": _instant(args.until, "--until") if args.until else _instant("0s", "--until"),
        }
    except ValueError as exc:
        return fail(str(exc), 2)
    if args.step:
        request["step"] = args.step
    try:
        body = _call(args, "/api/alerts/replay", body=request)
    except QueryError as exc:
        return fail(str(exc))
    if not _print(args, body):
        rows = [
            [t["time"], t["severity"], t["alertname"], t["labels"].get("agent", ""), t["from"], t["to"]]
            for t in body["transitions"]
        ]
        title = f"Replay: {body.get('evaluations', '?')} evaluations, {len(rows)} transitions"
        _table(title, ["time", "sev", "alert", "agent", "from", "to"], rows, "no transitions")
        for error in body.get("errors", []):
            print(f"evaluation error at {error['time']} in {error['alertname']}: {error['error']}")
    return 0


def run_ack(args: argparse.Namespace) -> int:
    try:
        body = _call(args, f"/api/alerts/{args.fingerprint}/ack", body={"by": args.by})
    except QueryError as exc:
        return fail(str(exc))
    if not _print(args, body):
        print(f"acknowledged {args.fingerprint} by {body['acknowledged_by']}")
    return 0


def _listing(
    args: argparse.Namespace, path: str, key: str, row: Any, title: str, columns: list[str], empty: str
) -> int:
    """GET ``path`` and print its ``key`` list as a table (one ``row(item)`` each), or the JSON."""
    try:
        body = _call(args, path)
    except QueryError as exc:
        return fail(str(exc))
    if not _print(args, body):
        _table(title, columns, [row(item) for item in body[key]], empty)
    return 0


def run_oncall(args: argparse.Namespace) -> int:
    return _listing(
        args,
        "/api/oncall",
        "schedules",
        lambda s: [
            s["schedule"],
            s.get("now") or "(nobody)",
            s.get("next") or "",
            s.get("next_handoff") or "",
        ],
        "On call",
        ["schedule", "now", "next", "hand-off"],
        "no schedules configured",
    )


def run_agents(args: argparse.Namespace) -> int:
    return _listing(
        args,
        "/api/agents",
        "agents",
        lambda a: [a["agent_id"], a["status"], a.get("last_heartbeat") or "", a.get("service") or ""],
        "Agents",
        ["agent", "status", "last heartbeat", "service"],
        "no heartbeats",
    )


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `alerts` (with `replay` and `ack`), `oncall` and `agents` to `reach-otel`."""
    alerts = sub.add_parser("alerts", help="list alerts; replay the rules over history; acknowledge")
    alerts.add_argument("--state", choices=("pending", "firing", "resolved"), help="only this state")
    add_query_arguments(alerts)
    alerts.set_defaults(func=run_alerts)
    actions = alerts.add_subparsers(dest="alerts_command", metavar="ACTION")

    replay = actions.add_parser("replay", help="what would have fired between --since and --until")
    replay.add_argument("--since", required=True, help="ISO-8601, unix ns, or a lookback like 2h")
    replay.add_argument("--until", default=None, help="ISO-8601, unix ns, or a lookback (default now)")
    replay.add_argument("--step", default=None, help="evaluation step (default the configured interval)")
    add_query_arguments(replay)
    replay.set_defaults(func=run_replay)

    ack = actions.add_parser("ack", help="acknowledge a firing alert (stops repeats and escalation)")
    ack.add_argument("fingerprint", metavar="FINGERPRINT")
    ack.add_argument("--by", required=True, help="who acknowledges")
    add_query_arguments(ack)
    ack.set_defaults(func=run_ack)

    oncall = sub.add_parser("oncall", help="who is on call now, and the next hand-off")
    add_query_arguments(oncall)
    oncall.set_defaults(func=run_oncall)

    agents = sub.add_parser("agents", help="agents by last heartbeat (live or lost)")
    add_query_arguments(agents)
    agents.set_defaults(func=run_agents)

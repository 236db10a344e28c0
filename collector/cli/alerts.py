"""`reach-otel alerts [replay|ack|deliveries]`: thin clients of a running collector's alerting API
(stdlib HTTP), printed as tables. Exit 1 when the
collector is unreachable or answers 4xx/5xx, 2 for a bad argument."""

from __future__ import annotations

import argparse
import getpass
import textwrap
import time
from datetime import datetime, timezone
from typing import Any

from reach_collector.cli.client import QueryError, add_query_arguments, call, fail, print_json

__all__ = ["deliveries_text", "register", "run_ack", "run_alerts", "run_deliveries", "run_replay"]

WIDTH = 80  # the deliveries listing fits a classic terminal


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
        body = call(args, "/api/alerts", params=params)
    except QueryError as exc:
        return fail(str(exc))
    if not print_json(args, body):
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
        from reach_collector.cli.render import print_table

        print_table("Alerts", columns, rows, "no alerts")
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
        body = call(args, "/api/alerts/replay", body=request)
    except QueryError as exc:
        return fail(str(exc))
    if not print_json(args, body):
        rows = [
            [t["time"], t["severity"], t["alertname"], t["labels"].get("agent", ""), t["from"], t["to"]]
            for t in body["transitions"]
        ]
        title = f"Replay: {body.get('evaluations', '?')} evaluations, {len(rows)} transitions"
        from reach_collector.cli.render import print_table

        print_table(title, ["time", "sev", "alert", "agent", "from", "to"], rows, "no transitions")
        for error in body.get("errors", []):
            print(f"evaluation error at {error['time']} in {error['alertname']}: {error['error']}")
    return 0


def _login() -> str | None:
    try:
        return getpass.getuser() or None
    except (KeyError, OSError):  # no login name for this uid (containers)
        return None


def run_ack(args: argparse.Namespace) -> int:
    request: dict[str, Any] = {}
    by = args.by or _login()
    if by:
        request["by"] = by
    if args.comment:
        request["comment"] = args.comment
    try:
        body = call(args, f"/api/alerts/{args.fingerprint}/ack", body=request)
    except QueryError as exc:
        return fail(str(exc))
    if not print_json(args, body):
        if body.get("already_acknowledged"):
            print(f"{args.fingerprint} was already acknowledged by {body['acknowledged_by']}")
        else:
            print(f"acknowledged {args.fingerprint} by {body['acknowledged_by']}")
    return 0


def _cell(value: Any, width: int) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def deliveries_text(deliveries: list[dict[str, Any]], width: int = WIDTH) -> str:
    """Delivery attempts as a table of at most ``width`` columns: one line per attempt (time,
    alert, agent, kind, recipient, attempt number, delivered or not), and a failure's reason on
    the lines below, wrapped. Times are never cut; long names are shortened with an ellipsis."""
    if not deliveries:
        return "no delivery attempts"
    head = ("time", "alert", "agent", "kind", "to", "#", "ok")
    rows = [
        (
            d.get("time") or "",
            d.get("alertname") or "",
            d.get("agent") or "",
            d.get("kind") or "",
            d.get("recipient") or "",
            str(d.get("attempt") or ""),
            "yes" if d.get("ok") else "NO",
        )
        for d in deliveries
    ]
    widths = [max(len(head[i]), *(len(r[i]) for r in rows)) for i in range(len(head))]
    # Shrink the name columns until the line fits: agent and recipient first (to 8), the alert's
    # name next, then all three down to their headers.
    for columns, floor in (((2, 4), 8), ((1,), 8), ((1, 2, 4), 0)):
        while sum(widths) + 2 * (len(widths) - 1) > width:
            i = max(columns, key=lambda k: widths[k])
            if widths[i] <= max(floor, len(head[i]) + 1):
                break
            widths[i] -= 1
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip()]
    for d, row in zip(deliveries, rows, strict=True):
        lines.append("  ".join(_cell(c, w).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if not d.get("ok"):
            reason = d.get("error") or "failed"
            if d.get("next_retry_at"):
                reason += f"; retrying at {d['next_retry_at']}"
            lines.extend(textwrap.wrap(reason, width, initial_indent="    ", subsequent_indent="    "))
    return "\n".join(lines)


def run_deliveries(args: argparse.Namespace) -> int:
    params = [("limit", str(args.limit))]
    if args.fingerprint:
        params.append(("fingerprint", args.fingerprint))
    if args.failed:
        params.append(("failed", "true"))
    try:
        body = call(args, "/api/alerts/deliveries", params=params)
    except QueryError as exc:
        return fail(str(exc))
    if not print_json(args, body):
        print(deliveries_text(body["deliveries"]))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `alerts` (with `replay`, `ack` and `deliveries`) to `reach-otel`."""
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
    ack.add_argument("--by", default=None, help="who acknowledges (default: your login name)")
    ack.add_argument("--comment", default=None, help="why, or what is being done (goes to the log)")
    add_query_arguments(ack)
    ack.set_defaults(func=run_ack)

    deliveries = actions.add_parser("deliveries", help="notification attempts: pages, retries, failures")
    deliveries.add_argument("--fingerprint", default=None, help="only this alert's")
    deliveries.add_argument("--failed", action="store_true", help="only failed attempts")
    deliveries.add_argument("--limit", type=int, default=50, help="the last N attempts (default 50)")
    add_query_arguments(deliveries)
    deliveries.set_defaults(func=run_deliveries)

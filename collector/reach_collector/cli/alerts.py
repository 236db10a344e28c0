"""`reach-otel alerts [replay|ack|deliveries]`: thin clients of a running collector's alerting API
(stdlib HTTP), printed as tables fitted to the terminal, times in the display zone. Exit 1 when
the collector is unreachable or refuses, 2 for a bad argument."""

from __future__ import annotations

import argparse
import getpass
import textwrap
import time
from datetime import datetime, timezone, tzinfo
from typing import Any

from reach_collector.cli.client import (
    UsageError,
    add_query_arguments,
    call,
    display_zone,
    print_json,
    query_command,
    requested_zone,
)
from reach_collector.cli.formats import parse_zone, when

__all__ = ["deliveries_text", "register", "run_ack", "run_alerts", "run_deliveries", "run_replay"]

WIDTH = 80  # the deliveries listing fits a classic terminal by default
# A replay at the collector's cost cap can take minutes over a large store; hanging up stops it.
REPLAY_TIMEOUT_S = 600.0


def _instant(value: str, name: str) -> str:
    """ISO-8601 and unix ns pass through; a lookback like ``30m`` means that long before now."""
    from reach_collector.config import ConfigError, parse_duration

    if value.strip().isdigit() or "T" in value or "-" in value:
        return value
    try:
        seconds = parse_duration(value, name)
    except ConfigError as exc:
        raise UsageError(f"{exc} (or an ISO-8601 time, or unix nanoseconds)") from None
    return datetime.fromtimestamp(time.time() - seconds, timezone.utc).isoformat()


# When an alert entered the state it is in.
SINCE = {"pending": "active_at", "firing": "fired_at", "resolved": "resolved_at"}


def alerts_table(alerts: list[dict[str, Any]], zone: tzinfo, width: int) -> Any:
    """Severity, alert and agent, state and since when, who acked, fingerprint: side by side when
    it fits, else the alert over its agent and the state over its time, so nothing is cut."""
    from reach_collector.cli.render import Col, fit_table, fits, stacked, two_line_table

    rows = []
    for a in alerts:
        since = when(a.get(SINCE.get(a["state"], "active_at")) or a.get("active_at"), zone)
        acked = a.get("acknowledged_by") or ""
        rows.append(
            [
                a["severity"],
                a["alertname"],
                a["labels"].get("agent", ""),
                a["state"],
                since,
                acked,
                a["fingerprint"],
            ]
        )
    flat = [
        Col("sev", whole=True),
        Col("alert", floor=12),
        Col("agent", floor=10),
        Col("state", whole=True),
        Col("since", whole=True),
        Col("acked by", floor=8),
        Col("fingerprint", whole=True),
    ]
    if fits(flat, rows, width):
        return fit_table(flat, rows, width)
    two = [
        Col("sev", whole=True),
        Col("alert / agent", floor=12),
        Col("state / since", whole=True),
        Col("fingerprint", whole=True),
    ]
    cells = [
        [r[0], stacked(r[1], r[2]), stacked(r[3], r[4]), stacked(r[6], f"acked by {r[5]}" if r[5] else "")]
        for r in rows
    ]
    return two_line_table(two, cells, width)


@query_command
def run_alerts(args: argparse.Namespace) -> int:
    params = [("state", args.state)] if args.state else None
    requested_zone(args)
    body = call(args, "/api/alerts", params=params)
    if not print_json(args, body):
        from reach_collector.cli.render import console, zone_heading

        out = console()
        if not body["alerts"]:
            out.print(f"no {args.state} alerts" if args.state else "no alerts")
            return 0
        zone = display_zone(args)
        out.print(zone_heading(f"{len(body['alerts'])} alert(s)", zone))
        out.print(alerts_table(body["alerts"], zone, out.width))
        print_causes(body["alerts"], out)
    return 0


def print_causes(alerts: list[dict[str, Any]], out: Any) -> None:
    """Under the table, the cause each firing alert carries (SPEC §17): its sentence, then the
    example traces to open with ``reach-otel why TRACE_ID``."""
    from rich.text import Text

    told = [a for a in alerts if a["state"] == "firing" and (a.get("annotations") or {}).get("cause")]
    if not told:
        return
    out.print()
    out.print(Text("Why they fire", style="bold"))
    for a in told:
        notes = a["annotations"]
        who = f" ({a['labels']['agent']})" if a["labels"].get("agent") else ""
        out.print(Text(f"{a['severity']} {a['alertname']}{who}: {notes['cause']}"))
        traces = [t for t in str(notes.get("cause_traces") or "").split(",") if t]
        if traces:
            out.print(
                Text(
                    "  reach-otel why "
                    + traces[0]
                    + (f"  (and {len(traces) - 1} more)" if traces[1:] else ""),
                    style="dim",
                )
            )


def transitions_table(transitions: list[dict[str, Any]], zone: tzinfo, width: int) -> Any:
    """Time, severity, alert and agent, and the change: side by side when it fits, else the alert
    over its agent."""
    from reach_collector.cli.render import Col, fit_table, fits, stacked, two_line_table

    rows = [
        [
            when(t["time"], zone),
            t["severity"],
            t["alertname"],
            t["labels"].get("agent", ""),
            f"{t['from']} → {t['to']}",
        ]
        for t in transitions
    ]
    flat = [
        Col("time", whole=True),
        Col("sev", whole=True),
        Col("alert", floor=12),
        Col("agent", floor=10),
        Col("change", whole=True),
    ]
    if fits(flat, rows, width):
        return fit_table(flat, rows, width)
    two = [
        Col("time", whole=True),
        Col("sev", whole=True),
        Col("alert / agent", floor=12),
        Col("change", whole=True),
    ]
    return two_line_table(two, [[r[0], r[1], stacked(r[2], r[3]), r[4]] for r in rows], width)


@query_command
def run_replay(args: argparse.Namespace) -> int:
    request: dict[str, Any] = {
        "since": _instant(args.since, "--since"),
        "until": _instant(args.until, "--until") if args.until else _instant("0s", "--until"),
    }
    if args.step:
        request["step"] = args.step
    requested_zone(args)
    body = call(args, "/api/alerts/replay", body=request, post_timeout=REPLAY_TIMEOUT_S)
    if not print_json(args, body):
        from reach_collector.cli.render import console, zone_heading

        zone = display_zone(args)
        out = console()
        title = f"Replay: {body.get('evaluations', '?')} evaluations, {len(body['transitions'])} transitions"
        if not body["transitions"]:
            out.print(f"{title}: nothing would have fired")
        else:
            out.print(zone_heading(title, zone))
            out.print(transitions_table(body["transitions"], zone, out.width))
        for error in body.get("errors", []):
            print(
                f"evaluation error at {when(error['time'], zone)} in {error['alertname']}: {error['error']}"
            )
    return 0


def _login() -> str | None:
    try:
        return getpass.getuser() or None
    except (KeyError, OSError):  # no login name for this uid (containers)
        return None


@query_command
def run_ack(args: argparse.Namespace) -> int:
    request: dict[str, Any] = {}
    by = args.by or _login()
    if by:
        request["by"] = by
    if args.comment:
        request["comment"] = args.comment
    body = call(args, f"/api/alerts/{args.fingerprint}/ack", body=request)
    if not print_json(args, body):
        if body.get("already_acknowledged"):
            print(f"{args.fingerprint} was already acknowledged by {body['acknowledged_by']}")
        else:
            print(f"acknowledged {args.fingerprint} by {body['acknowledged_by']}")
    return 0


def _cell(value: Any, width: int) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def _alerts(delivery: dict[str, Any]) -> str:
    """A grouped message's agent cell when its alerts name several agents: how many alerts."""
    many = len(delivery.get("fingerprints") or ())
    return f"{many} alerts" if many > 1 else ""


def deliveries_text(deliveries: list[dict[str, Any]], width: int = WIDTH, zone: tzinfo | None = None) -> str:
    """Delivery attempts as a table of at most ``width`` columns: one line per attempt (time,
    alert, agent or how many alerts a grouped message named, kind, recipient, attempt number,
    delivered or not), and a failure's reason on the lines below, wrapped. Times (in ``zone``,
    default UTC) are never cut; long names are shortened with an ellipsis."""
    zone = zone or parse_zone("UTC")
    if not deliveries:
        return "no delivery attempts"
    head = ("time", "alert", "agent", "kind", "to", "#", "ok")
    rows = [
        (
            when(d.get("time"), zone),
            d.get("alertname") or "",
            d.get("agent") or _alerts(d),
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
                reason += f"; retrying at {when(d['next_retry_at'], zone)}"
            lines.extend(textwrap.wrap(reason, width, initial_indent="    ", subsequent_indent="    "))
    return "\n".join(lines)


@query_command
def run_deliveries(args: argparse.Namespace) -> int:
    params = [("limit", str(args.limit))]
    if args.fingerprint:
        params.append(("fingerprint", args.fingerprint))
    if args.failed:
        params.append(("failed", "true"))
    requested_zone(args)
    body = call(args, "/api/alerts/deliveries", params=params)
    if not print_json(args, body):
        from reach_collector.cli.formats import zone_label
        from reach_collector.cli.render import console

        if not body["deliveries"]:
            print("no delivery attempts")
            return 0
        zone = display_zone(args)
        print(f"{len(body['deliveries'])} delivery attempt(s) · times in {zone_label(zone)}")
        print(deliveries_text(body["deliveries"], max(console().width, 60), zone))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `alerts` (with `replay`, `ack` and `deliveries`) to `reach-otel`."""
    alerts = sub.add_parser("alerts", help="list alerts; replay the rules over history; acknowledge")
    alerts.add_argument("--state", choices=("pending", "firing", "resolved"), help="only this state")
    add_query_arguments(alerts)
    alerts.set_defaults(func=run_alerts, cli_name="alerts")
    actions = alerts.add_subparsers(dest="alerts_command", metavar="ACTION")

    replay = actions.add_parser("replay", help="what would have fired between --since and --until")
    replay.add_argument("--since", required=True, help="ISO-8601, unix ns, or a lookback like 2h")
    replay.add_argument("--until", default=None, help="ISO-8601, unix ns, or a lookback (default now)")
    replay.add_argument("--step", default=None, help="evaluation step (default the configured interval)")
    add_query_arguments(replay)
    replay.set_defaults(func=run_replay, cli_name="alerts replay")

    ack = actions.add_parser("ack", help="acknowledge a firing alert (stops repeats and escalation)")
    ack.add_argument("fingerprint", metavar="FINGERPRINT")
    ack.add_argument("--by", default=None, help="who acknowledges (default: your login name)")
    ack.add_argument("--comment", default=None, help="why, or what is being done (goes to the log)")
    add_query_arguments(ack)
    ack.set_defaults(func=run_ack, cli_name="alerts ack")

    deliveries = actions.add_parser("deliveries", help="notification attempts: pages, retries, failures")
    deliveries.add_argument("--fingerprint", default=None, help="only this alert's")
    deliveries.add_argument("--failed", action="store_true", help="only failed attempts")
    deliveries.add_argument("--limit", type=int, default=50, help="the last N attempts (default 50)")
    add_query_arguments(deliveries)
    deliveries.set_defaults(func=run_deliveries, cli_name="alerts deliveries")

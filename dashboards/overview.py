"""The overview dashboard: golden metrics per agent (§0, §4) and the alert states they drive."""

from __future__ import annotations

from typing import Final

from build import Dashboard, Panel
from promql import (
    HEARTBEAT_STEPS,
    LATENCY_STEPS,
    SUCCESS_STEPS,
    all_rate,
    gauge,
    ok_rate,
    quantile,
    success_ratio,
    zero_if_none,
)


def alerts(state: str = "") -> str:
    """One series per alert, whatever the number of collectors exporting it (SPEC §16)."""
    only = f'alertstate="{state}", ' if state else ""
    by = "alertname, severity, agent, service, alertstate"
    return f'max by ({by}) (reach_alert_state{{{only}agent=~"$agent"}})'


OVERVIEW: Final = Dashboard(
    uid="reach-overview",
    title="reach-otel / Overview",
    description="Golden metrics per agent (throughput, success rate, P95/P99) and the alerts they drive.",
    panels=(
        Panel(
            "stat",
            "Throughput",
            "Successful agent calls per minute, all selected agents together "
            "(§0: throughput counts successes only). Worry when it drops while traffic does not: "
            "calls are failing or stuck.",
            [(zero_if_none(f"sum({ok_rate()})") + " * 60", "ok calls/min")],
            "reqpm",
            (("blue", None),),
            width=6,
            height=4,
        ),
        Panel(
            "stat",
            "Success rate",
            "Share of agent calls whose span status is not ERROR over the "
            "rate interval. Below 50 % for 5 minutes pages on-call (P0); below 95 % deserves a look.",
            [(zero_if_none(f"sum({ok_rate()})") + f" / sum({all_rate()})", "success")],
            "percentunit",
            SUCCESS_STEPS,
            width=6,
            height=4,
            min=0,
            max=1,
        ),
        Panel(
            "stat",
            "Worst current P99",
            "Highest per-agent P99 latency over the collector's current "
            "1-minute window (the P1 rule's input). Red at 1.5 × the default 10 s threshold.",
            [('max(reach_agent_latency_p99_seconds{agent=~"$agent"})', "worst P99")],
            "s",
            LATENCY_STEPS,
            width=6,
            height=4,
        ),
        Panel(
            "stat",
            "Alerts",
            "Alerts of the selected agents now firing and pending (collector rules "
            "P0/P1/P2). Any firing P0 means someone is being paged.",
            [
                (f"count({alerts('firing')}) or vector(0)", "firing"),
                (f"count({alerts('pending')}) or vector(0)", "pending"),
            ],
            "short",
            (("green", None), ("red", 1.0)),
            width=6,
            height=4,
        ),
        Panel(
            "timeseries",
            "Throughput per agent",
            "Successful calls per minute by agent. A step down "
            "for one agent while the others hold means that agent is failing or its callers stopped.",
            [(f"{ok_rate()} * 60", "{{agent}}")],
            "reqpm",
            agent_links=True,
        ),
        Panel(
            "timeseries",
            "Success rate per agent",
            "ok / all calls per agent over the rate interval. "
            "The red line is the P0 threshold (50 %); sustained dips below it page on-call.",
            [(success_ratio(), "{{agent}}")],
            "percentunit",
            SUCCESS_STEPS,
            min=0,
            max=1,
            agent_links=True,
            errors_link=True,
        ),
        Panel(
            "timeseries",
            "P95 latency per agent",
            "95th percentile of agent call duration (failed "
            "calls included) from the duration histogram (GenAI buckets, so values are interpolated). "
            "Averages hide tails: watch this, not the mean.",
            [(quantile(0.95), "{{agent}}")],
            "s",
            LATENCY_STEPS,
            agent_links=True,
        ),
        Panel(
            "timeseries",
            "P99 latency per agent",
            "99th percentile of agent call duration. Above 1.5 × "
            "the agent's threshold (default 10 s, red line at 15 s) for 3 minutes pages the front line (P1).",
            [(quantile(0.99), "{{agent}}")],
            "s",
            LATENCY_STEPS,
            agent_links=True,
        ),
        Panel(
            "bargauge",
            "Current success ratio (P0 input)",
            "Success ratio per agent over the collector's "
            "trailing 1-minute window, exactly what rule P0 evaluates (shown only for agents with calls).",
            [(gauge("reach_agent_success_ratio"), "{{agent}}")],
            "percentunit",
            SUCCESS_STEPS,
            width=8,
            instant=True,
            min=0,
            max=1,
            agent_links=True,
            errors_link=True,
        ),
        Panel(
            "bargauge",
            "Current P99 (P1 input)",
            "P99 latency per agent over the trailing 1-minute "
            "window, what rule P1 compares with 1.5 × the agent's threshold.",
            [(gauge("reach_agent_latency_p99_seconds"), "{{agent}}")],
            "s",
            LATENCY_STEPS,
            width=8,
            instant=True,
            agent_links=True,
        ),
        Panel(
            "bargauge",
            "Heartbeat age (P2 input)",
            "Seconds since each agent's last heartbeat. Agents "
            "renew every 30 s; past 60 s rule P2 deregisters the agent (nobody is paged).",
            [(f"time() - {gauge('reach_agent_last_heartbeat_timestamp_seconds')}", "{{agent}}")],
            "s",
            HEARTBEAT_STEPS,
            width=8,
            instant=True,
            agent_links=True,
        ),
        Panel(
            "timeseries",
            "Calls by status",
            "Agent calls per minute split by agent and status (ok / "
            "error), stacked. A growing error band is the first sign of a P0.",
            [(f"{all_rate('agent, status')} * 60", "{{agent}} {{status}}")],
            "reqpm",
            stack=True,
            agent_links=True,
            errors_link=True,
        ),
        Panel(
            "table",
            "Active alerts",
            "Every pending or firing alert with its labels. Pending means the "
            "condition holds but not yet for the rule's `for` duration; firing means it notified.",
            [(alerts(), "")],
            "short",
            (("green", None), ("red", 1.0)),
            instant=True,
        ),
    ),
)

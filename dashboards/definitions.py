"""The three reach-otel dashboards as data: every panel's PromQL, unit, thresholds and meaning.

Series are those of the collector's `/metrics` (collector/exposition.py). `$__rate_interval` for
rates, `$__range` for totals over the picked time range; `$agent` is a regex (All = `.*`).
"""

from __future__ import annotations

from typing import Final

from build import COLLECTOR_URL_VARIABLE, Dashboard, Panel, textbox

CALLS: Final = "reach_agent_calls_total"
DURATION: Final = "reach_agent_call_duration_seconds_bucket"
TOKENS: Final = "reach_agent_tokens_total"
HANDOFFS: Final = "reach_handoffs_total"
LOOPS: Final = "reach_loops_detected_total"
HOPS: Final = "reach_request_hops"
AGENT_SEL: Final = 'operation="invoke_agent", agent=~"$agent"'
RI: Final = "[$__rate_interval]"
RANGE: Final = "[$__range]"

# Thresholds that mirror the alert rules (§4): P0 below 50 % success, P1 above 1.5 × 10 s.
SUCCESS_STEPS: Final = (("red", None), ("orange", 0.5), ("green", 0.95))
LATENCY_STEPS: Final = (("green", None), ("orange", 10.0), ("red", 15.0))
HEARTBEAT_STEPS: Final = (("green", None), ("orange", 35.0), ("red", 60.0))


def ok_rate(by: str = "agent") -> str:
    return f'sum by ({by}) (rate({CALLS}{{{AGENT_SEL}, status="ok"}}{RI}))'


def all_rate(by: str = "agent") -> str:
    return f"sum by ({by}) (rate({CALLS}{{{AGENT_SEL}}}{RI}))"


def quantile(q: float, by: str = "agent") -> str:
    return f"histogram_quantile({q}, sum by ({by}, le) (rate({DURATION}{{{AGENT_SEL}}}{RI})))"


def handoff_share(selector: str, window: str = RANGE) -> str:
    """Share of handoffs (from the selected agents) matching ``selector``; 0 when none match."""
    base = 'source=~"$agent"'
    part = f"sum(increase({HANDOFFS}{{{base}, {selector}}}{window}))"
    return f"({part} or vector(0)) / sum(increase({HANDOFFS}{{{base}}}{window}))"


OVERVIEW: Final = Dashboard(
    uid="reach-overview",
    title="reach-otel / Overview",
    description="Golden metrics per agent (throughput, success rate, P95/P99) and the alerts they drive.",
    extra_variables=(COLLECTOR_URL_VARIABLE,),
    panels=(
        Panel(
            "stat",
            "Throughput",
            "Successful agent calls per minute, all selected agents together "
            "(§0: throughput counts successes only). Worry when it drops while traffic does not: "
            "calls are failing or stuck.",
            [(f"sum({ok_rate()}) * 60", "ok calls/min")],
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
            [(f"sum({ok_rate()}) / sum({all_rate()})", "success")],
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
                ('count(reach_alert_state{alertstate="firing", agent=~"$agent"}) or vector(0)', "firing"),
                ('count(reach_alert_state{alertstate="pending", agent=~"$agent"}) or vector(0)', "pending"),
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
            [(f"{ok_rate()} / {all_rate()}", "{{agent}}")],
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
            [('reach_agent_success_ratio{agent=~"$agent"}', "{{agent}}")],
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
            [('reach_agent_latency_p99_seconds{agent=~"$agent"}', "{{agent}}")],
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
            [('time() - reach_agent_last_heartbeat_timestamp_seconds{agent=~"$agent"}', "{{agent}}")],
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
            [
                (
                    'sum by (alertname, severity, agent, service, alertstate) (reach_alert_state{agent=~"$agent"})',
                    "",
                )
            ],
            "short",
            (("green", None), ("red", 1.0)),
            instant=True,
        ),
    ),
)

MULTI_AGENT: Final = Dashboard(
    uid="reach-multi-agent",
    title="reach-otel / Multi-agent",
    description="Handoffs and their efficiency, hops per request, loops, tokens and estimated cost.",
    extra_variables=(
        COLLECTOR_URL_VARIABLE,
        textbox(
            "input_price", "Input USD / 1M tokens", "0.15", "Price of 1M input tokens for the cost panels."
        ),
        textbox(
            "output_price", "Output USD / 1M tokens", "0.60", "Price of 1M output tokens for the cost panels."
        ),
    ),
    panels=(
        Panel(
            "stat",
            "Handoffs per minute",
            "Agent-to-agent handoffs started by the selected agents, per "
            "minute. A jump without more requests usually means agents bounce work between each other.",
            [(f'sum(rate({HANDOFFS}{{source=~"$agent"}}{RI})) * 60', "handoffs/min")],
            "reqpm",
            (("blue", None),),
            width=6,
            height=4,
        ),
        Panel(
            "stat",
            "Handoff efficiency",
            "Handoffs resolved at the target (status committed) / handoffs "
            "triggered over the time range. Below 80 % the receiving agents reject or fail much of "
            "what they get.",
            [(handoff_share('status="committed"'), "efficiency")],
            "percentunit",
            (("red", None), ("orange", 0.8), ("green", 0.95)),
            width=6,
            height=4,
            min=0,
            max=1,
        ),
        Panel(
            "stat",
            "Loop rate",
            "Handoffs that detected a ping-pong loop (A→B→A→B) per request with an "
            "agent span, over the time range. Anything above 0 wastes tokens; above 5 % is a routing bug.",
            [
                (
                    f"(sum(increase({LOOPS}{RANGE})) or vector(0)) / sum(increase({HOPS}_count{RANGE}))",
                    "loops/request",
                )
            ],
            "percentunit",
            (("green", None), ("orange", 0.01), ("red", 0.05)),
            width=6,
            height=4,
            min=0,
        ),
        Panel(
            "stat",
            "Requests within 2 hops",
            "Share of requests that needed at most 2 handoffs over the "
            "time range. The goal is 95 %; below it, routing sends requests through too many agents.",
            [
                (
                    f'sum(increase({HOPS}_bucket{{le=~"2|2\\\\.0"}}{RANGE})) / sum(increase({HOPS}_count{RANGE}))',
                    "within 2 hops",
                )
            ],
            "percentunit",
            (("red", None), ("orange", 0.9), ("green", 0.95)),
            width=6,
            height=4,
            min=0,
            max=1,
        ),
        Panel(
            "timeseries",
            "Handoffs by route",
            "Handoffs per minute by source → target agent. A pair "
            "that grows in both directions is a loop in the making.",
            [
                (
                    f'sum by (source, target) (rate({HANDOFFS}{{source=~"$agent"}}{RI})) * 60',
                    "{{source}} → {{target}}",
                )
            ],
            "reqpm",
            stack=True,
        ),
        Panel(
            "timeseries",
            "Handoff outcome rates",
            "Acceptance (accepted, running, committed or failed / "
            "all), commit (committed / accepted), unknown (unknown or expired / all) and escalation "
            "(mode escalate / all). Rising unknown means targets time out; rising escalation means "
            "agents give up.",
            [
                (handoff_share('status=~"accepted|running|committed|failed"', RI), "acceptance"),
                (
                    f'(sum(increase({HANDOFFS}{{source=~"$agent", status="committed"}}{RI})) or vector(0)) / '
                    f'sum(increase({HANDOFFS}{{source=~"$agent", status=~"accepted|running|committed|failed"}}{RI}))',
                    "commit",
                ),
                (handoff_share('status=~"unknown|expired"', RI), "unknown"),
                (handoff_share('mode="escalate"', RI), "escalation"),
            ],
            "percentunit",
            min=0,
            max=1,
        ),
        Panel(
            "bargauge",
            "Hop-count distribution",
            "Requests by number of handoffs (cumulative buckets: "
            '"≤ 2" counts every request with at most 2 hops) over the time range. Most mass should '
            "sit at ≤ 2.",
            [(f"sum by (le) (increase({HOPS}_bucket{RANGE}))", "≤ {{le}}")],
            "short",
            width=12,
            instant=True,
            heatmap_format=True,
        ),
        Panel(
            "timeseries",
            "Hops per request (P50 / P95 / P99)",
            "Percentiles of handoffs per request. "
            "Watch P99: near the hop limit (default 5) requests are about to be cut off.",
            [
                (f"histogram_quantile({q}, sum by (le) (rate({HOPS}_bucket{RI})))", f"P{int(q * 100)}")
                for q in (0.5, 0.95, 0.99)
            ],
            "short",
            (("green", None), ("orange", 3.0), ("red", 5.0)),
            min=0,
        ),
        Panel(
            "bargauge",
            "Loops detected by agent",
            "Loop detections by the agent whose handoff closed "
            "the cycle, over the time range. Open its traces to see the visited path.",
            [(f'sum by (agent) (increase({LOOPS}{{agent=~"$agent"}}{RANGE}))', "{{agent}}")],
            "short",
            (("green", None), ("orange", 1.0), ("red", 10.0)),
            instant=True,
            agent_links=True,
        ),
        Panel(
            "timeseries",
            "Tokens per agent",
            "LLM tokens per minute by agent and type (input/output), "
            "attributed to the agent that made the call. Find the agent that eats the budget.",
            [(f'sum by (agent, type) (rate({TOKENS}{{agent=~"$agent"}}{RI})) * 60', "{{agent}} {{type}}")],
            "suffix: tok/min",
            stack=True,
            agent_links=True,
        ),
        Panel(
            "bargauge",
            "Token share per agent",
            "Each agent's input + output tokens / all agents' tokens "
            "over the time range. One agent above 50 % is where cost work pays off first.",
            [
                (
                    f'sum by (agent) (increase({TOKENS}{{agent=~"$agent"}}{RANGE})) / '
                    f"scalar(sum(increase({TOKENS}{RANGE})))",
                    "{{agent}}",
                )
            ],
            "percentunit",
            (("green", None), ("orange", 0.5)),
            instant=True,
            min=0,
            max=1,
            agent_links=True,
        ),
        Panel(
            "bargauge",
            "Tokens per model",
            "Input and output tokens by model over the time range.",
            [(f'sum by (model, type) (increase({TOKENS}{{agent=~"$agent"}}{RANGE}))', "{{model}} {{type}}")],
            "short",
            instant=True,
        ),
        Panel(
            "bargauge",
            "Estimated cost per agent",
            "Tokens over the time range × the dashboard's price "
            "variables (USD per 1M input / output tokens; one price for every model). The collector's "
            "/api/metrics/agents applies its per-model price table instead.",
            [
                (
                    f'sum by (agent) ((increase({TOKENS}{{type="input", agent=~"$agent"}}{RANGE}) * $input_price) '
                    f'or (increase({TOKENS}{{type="output", agent=~"$agent"}}{RANGE}) * $output_price)) / 1e6',
                    "{{agent}}",
                )
            ],
            "currencyUSD",
            instant=True,
            agent_links=True,
        ),
        Panel(
            "bargauge",
            "Estimated cost per model",
            "Tokens by model over the time range × the price variables (USD per 1M tokens).",
            [
                (
                    f'sum by (model) ((increase({TOKENS}{{type="input", agent=~"$agent"}}{RANGE}) * $input_price) '
                    f'or (increase({TOKENS}{{type="output", agent=~"$agent"}}{RANGE}) * $output_price)) / 1e6',
                    "{{model}}",
                )
            ],
            "currencyUSD",
            instant=True,
        ),
    ),
)

COLLECTOR: Final = Dashboard(
    uid="reach-collector",
    title="reach-otel / Collector",
    description="The collector's own health: ingest rate, rejected spans, write queue and commit latency.",
    with_agent=False,
    panels=(
        Panel(
            "timeseries",
            "Ingest rate",
            "Spans received per second (OTLP over HTTP and gRPC), accepted "
            "or not. A drop to 0 while apps run means exporters cannot reach the collector.",
            [("sum(rate(reach_collector_spans_received_total[$__rate_interval]))", "received")],
            "cps",
        ),
        Panel(
            "timeseries",
            "Rejected spans",
            "Spans rejected at ingest per second (bad ids, timestamps) "
            "and their share of all received. Any steady rejection means an exporter sends broken data.",
            [
                ("sum(rate(reach_collector_spans_rejected_total[$__rate_interval]))", "rejected/s"),
                (
                    "sum(rate(reach_collector_spans_rejected_total[$__rate_interval])) / "
                    "sum(rate(reach_collector_spans_received_total[$__rate_interval]))",
                    "share",
                ),
            ],
            "short",
            (("green", None), ("red", 1.0)),
        ),
        Panel(
            "timeseries",
            "Write queue depth",
            "Spans accepted into memory but not yet committed to "
            "DuckDB. Near the queue bound (262 144 by default) ingest answers 429 and exporters back off.",
            [("sum(reach_collector_queue_spans)", "queued spans")],
            "short",
            (("green", None), ("orange", 100000.0), ("red", 200000.0)),
            min=0,
        ),
        Panel(
            "timeseries",
            "Write latency",
            "Commit time of one span batch (P50 / P99). A 200 is sent only "
            "after the commit, so slow commits are slow ingest; above 1 s the disk is the bottleneck.",
            [
                (
                    f"histogram_quantile({q}, sum by (le) (rate(reach_collector_write_seconds_bucket[$__rate_interval])))",
                    f"P{int(q * 100)}",
                )
                for q in (0.5, 0.99)
            ],
            "s",
            (("green", None), ("orange", 0.25), ("red", 1.0)),
        ),
        Panel(
            "timeseries",
            "Commits per second",
            "Span batches committed per second. With steady ingest "
            "and fewer commits, batches are growing: the writer is falling behind.",
            [("sum(rate(reach_collector_write_seconds_count[$__rate_interval]))", "commits/s")],
            "ops",
        ),
        Panel(
            "stat",
            "Spans received (range)",
            "Spans received over the selected time range.",
            [("sum(increase(reach_collector_spans_received_total[$__range]))", "spans")],
            "short",
            (("blue", None),),
            instant=True,
        ),
    ),
)

DASHBOARDS: Final = (OVERVIEW, MULTI_AGENT, COLLECTOR)

"""The multi-agent dashboard: handoffs, efficiency, hops, loops, tokens and cost (§0, §11), the
agent topology as a Node Graph (§15), and the quality of the agents' answers (§18)."""

from __future__ import annotations

from typing import Final

from build import Dashboard, Panel
from promql import (
    ACCEPTED,
    AGENT_SEL,
    CALLS,
    EVALUATIONS,
    GOOD_LABELS,
    HANDOFFS,
    HOPS,
    LE_2,
    LOOPED,
    LOOPS,
    RANGE,
    RI,
    TOKENS,
    cost,
    graph_edges,
    graph_nodes,
    handoff_share,
    histogram_quantile,
    zero_if_none,
)

MULTI_AGENT: Final = Dashboard(
    uid="reach-multi-agent",
    title="reach-otel / Multi-agent",
    description="Handoffs and their efficiency, hops per request, loops, tokens and estimated cost.",
    panels=(
        Panel(
            "stat",
            "Handoffs per minute",
            "Agent-to-agent handoffs started by the selected agents, per "
            "minute. A jump without more requests usually means agents bounce work between each other.",
            [(zero_if_none(f'sum(rate({HANDOFFS}{{source=~"$agent"}}{RI}))') + " * 60", "handoffs/min")],
            "reqpm",
            (("blue", None),),
            width=6,
            height=4,
        ),
        Panel(
            "stat",
            "Handoff efficiency",
            "Handoffs resolved at the target (outcome committed) / handoffs "
            "triggered over the time range, as /api/metrics/agents counts them: a recorded status "
            "stands, a handoff with none takes its target's next agent span (inferred). Below 80 % the "
            "receiving agents reject or fail much of what they get.",
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
            "Share of requests with an agent span in which a ping-pong loop "
            "(A→B→A→B) was detected, over the time range, as /api/metrics/agents counts it. Anything "
            "above 0 wastes tokens; above 5 % is a routing bug.",
            [
                (
                    f"(sum(increase({LOOPED}{RANGE})) or vector(0)) / sum(increase({HOPS}_count{RANGE}))",
                    "looped requests",
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
                    f"sum(increase({HOPS}_bucket{{{LE_2}}}{RANGE})) / sum(increase({HOPS}_count{RANGE}))",
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
            "nodeGraph",
            "Agent topology",
            "Agents (circles, with their calls over the time range) and the "
            "handoffs between them (arrows, with their count), from the collector's service graph "
            "series (traces_service_graph_request_total{client, server}: client = source agent, "
            "server = target agent). Grafana's Tempo data source draws the same graph with its "
            "failure and latency stats when its service graph setting names this Prometheus "
            "(provisioning/datasources/reach-otel.yml). The collector's own view: /ui/topology.",
            [(graph_nodes(), "nodes"), (graph_edges(), "edges")],
            "short",
            width=24,
            height=10,
            instant=True,
            extra={
                "options": {"nodes": {}, "edges": {}},
                # Each table query's value column ("Value #A", "Value #B") is the node's or
                # edge's main stat; the label columns Node Graph does not read are dropped.
                "transformations": [
                    {
                        "id": "organize",
                        "options": {
                            "excludeByName": {"Time": True, "agent": True, "client": True, "server": True},
                            "renameByName": {"Value #A": "mainstat", "Value #B": "mainstat"},
                        },
                    }
                ],
            },
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
            "Handoffs by outcome",
            "Handoffs per minute by outcome (SPEC §11), the one "
            "the trace view and /api/metrics/agents show: (inferred) where no status was recorded and "
            "the target's next agent span decided. A handoff is counted once its outcome is known.",
            [
                (
                    f'sum by (status, inferred) (rate({HANDOFFS}{{source=~"$agent"}}{RI})) * 60',
                    "{{status}} (inferred={{inferred}})",
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
            "(mode escalate / all), and the share whose outcome was inferred from the target's next "
            "agent span (no status recorded). Rising unknown means targets time out; rising escalation "
            "means agents give up.",
            [
                (handoff_share(f'status=~"{ACCEPTED}"', RI), "acceptance"),
                (
                    f'(sum(increase({HANDOFFS}{{source=~"$agent", status="committed"}}{RI})) or vector(0)) / '
                    f'sum(increase({HANDOFFS}{{source=~"$agent", status=~"{ACCEPTED}"}}{RI}))',
                    "commit",
                ),
                (handoff_share('status=~"unknown|expired"', RI), "unknown"),
                (handoff_share('mode="escalate"', RI), "escalation"),
                (handoff_share('inferred="true"', RI), "inferred"),
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
            [(histogram_quantile(q, f"{HOPS}_bucket"), f"P{int(q * 100)}") for q in (0.5, 0.95, 0.99)],
            "short",
            (("green", None), ("orange", 3.0), ("red", 5.0)),
            min=0,
        ),
        Panel(
            "bargauge",
            "Loops detected by agent",
            "Loop detections by the agent whose handoff closed "
            "the cycle, over the time range. Open its traces to see the visited path.",
            [
                (
                    f'sum by (agent) (increase({LOOPS}{{agent=~"$agent"}}{RANGE})) or '
                    f"sum by (agent) (increase({CALLS}{{{AGENT_SEL}}}{RANGE})) * 0",
                    "{{agent}}",
                )
            ],
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
            "LLM cost over the time range, priced by the collector "
            "at ingest from its per-model price table (config `prices`, USD per 1M tokens), as "
            "/api/metrics/agents prices it. An agent missing here used only models the table lacks.",
            [
                (
                    cost("agent"),
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
            "LLM cost by model over the time range at the collector's "
            "price table; a model missing from the table has no cost (unknown, not 0).",
            [
                (
                    cost("model"),
                    "{{model}}",
                )
            ],
            "currencyUSD",
            instant=True,
        ),
        Panel(
            "bargauge",
            "Answers judged good per agent",
            "Quality (SPEC §18): the share of each agent's evaluated answers whose verdict is a good "
            "label (correct, good, pass, positive, resolved, yes: the collector's default judgement) "
            "over the time range — LLM judges, heuristics and users' feedback alike. Status codes play "
            "no part: an agent can answer wrongly without raising. A quality rule pages its owner.",
            [
                (
                    f'sum by (agent) (increase({EVALUATIONS}{{agent=~"$agent", {GOOD_LABELS}}}{RANGE}))'
                    f' / sum by (agent) (increase({EVALUATIONS}{{agent=~"$agent"}}{RANGE}))',
                    "{{agent}}",
                )
            ],
            "percentunit",
            (("red", None), ("orange", 0.8), ("green", 0.95)),
            instant=True,
            min=0,
            max=1,
            agent_links=True,
        ),
        Panel(
            "timeseries",
            "Evaluations per minute by verdict",
            "Stored evaluations per minute by evaluation and label (judges' and users' verdicts on "
            "spans, over OTLP logs, span events or POST /api/feedback).",
            [
                (
                    f'sum by (evaluation, label) (rate({EVALUATIONS}{{agent=~"$agent"}}{RI})) * 60',
                    "{{evaluation}} {{label}}",
                )
            ],
            "suffix: /min",
            stack=True,
        ),
    ),
)

"""PromQL building blocks shared by the dashboards: series names, selectors, thresholds.

Series are those of the collector's `/metrics` (reach_collector/exposition/). `$__rate_interval` for
rates, `$__range` for totals over the picked time range; `$agent` is a regex (All = `.*`).

Several collectors (SPEC §16) each export their own counters, so counters are always summed; the
window gauges (success ratio, P99, window calls, heartbeats) are read from the shared store, so every
collector reports the same value and they are combined with `max`, never summed.
"""

from __future__ import annotations

from typing import Final

CALLS: Final = "reach_agent_calls_total"
DURATION: Final = "reach_agent_call_duration_seconds_bucket"
TOKENS: Final = "reach_agent_tokens_total"
COST: Final = "reach_agent_cost_usd_total"
HANDOFFS: Final = "reach_handoffs_total"
LOOPS: Final = "reach_loops_detected_total"
LOOPED: Final = "reach_requests_looped_total"
HOPS: Final = "reach_request_hops"
EVALUATIONS: Final = "reach_evaluations_total"  # {agent, evaluation, label} (SPEC §18)
# The labels quality.default judges good when the config says nothing (query.judged).
GOOD_LABELS: Final = 'label=~"correct|good|pass|positive|resolved|yes"'
# Grafana's service graph series (reach_collector/exposition/service_graph.py):
# client = source agent, server = target.
GRAPH_TOTAL: Final = "traces_service_graph_request_total"
GRAPH_FAILED: Final = "traces_service_graph_request_failed_total"
AGENT_SEL: Final = 'operation="invoke_agent", agent=~"$agent"'
RI: Final = "[$__rate_interval]"
RANGE: Final = "[$__range]"
ACCEPTED: Final = "accepted|running|committed|failed"  # handoffs the target took on (§11)
# The "≤ 2 hops" bucket: Prometheus 2 keeps le="2.0" as exposed, Prometheus 3 normalises it to "2".
LE_2: Final = 'le=~"2|2\\\\.0"'

# Thresholds that mirror the alert rules (§4): P0 below 50 % success, P1 above 1.5 × 10 s.
SUCCESS_STEPS: Final = (("red", None), ("orange", 0.5), ("green", 0.95))
LATENCY_STEPS: Final = (("green", None), ("orange", 10.0), ("red", 15.0))
HEARTBEAT_STEPS: Final = (("green", None), ("orange", 35.0), ("red", 60.0))


def ok_rate(by: str = "agent") -> str:
    return f'sum by ({by}) (rate({CALLS}{{{AGENT_SEL}, status="ok"}}{RI}))'


def all_rate(by: str = "agent") -> str:
    return f"sum by ({by}) (rate({CALLS}{{{AGENT_SEL}}}{RI}))"


def success_ratio(by: str = "agent") -> str:
    """ok / all calls; 0 (not "no data") for a group whose every call failed."""
    return f"({ok_rate(by)} or {all_rate(by)} * 0) / {all_rate(by)}"


def gauge(name: str) -> str:
    """One value per agent of a store-derived gauge, whatever the number of collectors."""
    return f'max by (agent) ({name}{{agent=~"$agent"}})'


def zero_if_none(expr: str) -> str:
    """A single-value sum that is 0, not "no data", when nothing happened."""
    return f"({expr} or vector(0))"


def quantile(q: float, by: str = "agent") -> str:
    return f"histogram_quantile({q}, sum by ({by}, le) (rate({DURATION}{{{AGENT_SEL}}}{RI})))"


def handoff_share(selector: str, window: str = RANGE) -> str:
    """Share of handoffs (from the selected agents) matching ``selector``; 0 when none match."""
    base = 'source=~"$agent"'
    part = f"sum(increase({HANDOFFS}{{{base}, {selector}}}{window}))"
    return f"({part} or vector(0)) / sum(increase({HANDOFFS}{{{base}}}{window}))"


def cost(by: str) -> str:
    """USD by ``by`` over the range, priced by the collector at ingest from its ``prices`` table
    (the same per-model prices as /api/metrics/agents); unpriced models have no series."""
    return f'sum by ({by}) (increase({COST}{{agent=~"$agent"}}{RANGE}))'


def histogram_quantile(q: float, bucket: str) -> str:
    return f"histogram_quantile({q}, sum by (le) (rate({bucket}{RI})))"


def _copy(expr: str, to: str, source: str) -> str:
    """``expr`` with label ``to`` set to label ``source``'s value (``label_join`` of one label, with no
    ``$1`` for Grafana to take for a variable)."""
    return f'label_join({expr}, "{to}", "", "{source}")'


def graph_edges() -> str:
    """Handoffs per ``source → target`` over the range as Node Graph edges: ``id``, ``source`` and
    ``target`` labels made from Grafana's service graph series (its value becomes ``mainstat``)."""
    edges = f'sum by (client, server) (increase({GRAPH_TOTAL}{{client=~"$agent"}}{RANGE}))'
    with_ends = _copy(_copy(edges, "source", "client"), "target", "server")
    return f'label_join({with_ends}, "id", " → ", "client", "server")'


def graph_nodes() -> str:
    """Agent calls over the range as Node Graph nodes (``id`` and ``title`` = the agent), so an
    agent that only hands off (never a target) is drawn too."""
    calls = f"sum by (agent) (increase({CALLS}{{{AGENT_SEL}}}{RANGE}))"
    return _copy(_copy(calls, "id", "agent"), "title", "agent")

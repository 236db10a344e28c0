"""What the stored spans say of agents known by their heartbeats: the service each runs in."""

from __future__ import annotations

from typing import Any, Final

from reach_collector.store.base import TraceStore
from reach_collector.store.dialect import dialect_of
from reach_otel import semconv as sc

__all__ = ["fill_services"]

_SERVICE_LOOKBACK_NS: Final = 86_400 * 1_000_000_000  # as far back as heartbeats are read


def fill_services(store: TraceStore, agents: list[dict[str, Any]], now_ns: int) -> None:
    """Give each agent whose heartbeats named no service the service of its latest span in the
    last day: an ``invoke_agent`` span of that agent name, or an OTLP heartbeat span of that id."""
    missing = sorted({a["agent_id"] for a in agents if not a.get("service")})
    if not missing:
        return
    marks = ", ".join("?" * len(missing))
    since = now_ns - _SERVICE_LOOKBACK_NS
    agent_id, key = dialect_of(store).attr("attributes", sc.GEN_AI_AGENT_ID)
    rows = store.query(
        "SELECT who, argMax(service, end_ns) FROM ("
        " SELECT agent AS who, service, end_ns FROM spans"
        f" WHERE end_ns > ? AND operation = ? AND agent IN ({marks}) AND service IS NOT NULL"
        " UNION ALL"
        f" SELECT {agent_id} AS who, service, end_ns FROM spans"
        " WHERE end_ns > ? AND name = ? AND service IS NOT NULL"
        f") WHERE who IN ({marks}) GROUP BY who",
        [since, sc.OP_AGENT, *missing, *key, since, sc.HEARTBEAT_SPAN_NAME, *missing],
    )
    found = dict(rows)
    for agent in agents:
        if not agent.get("service") and found.get(agent["agent_id"]):
            agent["service"] = found[agent["agent_id"]]

"""Every read of agents' heartbeats, one definition each for every store: the last
``POST /api/heartbeats`` of each agent id (``last_posted``), the last OTLP ``heartbeat`` span of each
(``last_heartbeats``), and the service of agents whose heartbeats named none (``fill_services``).
"""

from __future__ import annotations

from typing import Any, Final

from reach_collector.store.base import Heartbeat, TraceStore
from reach_collector.store.dialect import dialect_of
from reach_otel import semconv as sc

__all__ = ["fill_services", "last_heartbeats", "last_posted"]

_NS: Final = 1_000_000_000
_SERVICE_LOOKBACK_NS: Final = 86_400 * _NS  # as far back as heartbeats are read
# argMax and ifNull read the same on DuckDB (case-insensitive arg_max, ifnull) and ClickHouse.
_POSTED: Final = (
    "SELECT agent_id, max(time_ns), argMax(service, time_ns), argMax(ifNull(status, 'live'), time_ns) "
    "FROM heartbeats WHERE time_ns > ? AND time_ns <= ? GROUP BY agent_id"
)


def last_posted(store: TraceStore, now_ns: int, lookback_s: float) -> dict[str, Heartbeat]:
    """Agent id → its last ``POST /api/heartbeats`` in ``(now − lookback, now]`` (stopped when
    that last one said so)."""
    rows = store.query(_POSTED, [now_ns - int(lookback_s * _NS), now_ns])
    return {
        agent: Heartbeat(int(t) / 1e9, service, status == "stopped") for agent, t, service, status in rows
    }


def last_heartbeats(store: TraceStore, now_ns: int, lookback_s: float = 86400.0) -> dict[str, float]:
    """Agent id → unix seconds of its last OTLP heartbeat span ending in ``(now − lookback, now]``."""
    lo, hi = now_ns - int(lookback_s * _NS), now_ns
    agent_id, key = dialect_of(store).attr("attributes", sc.GEN_AI_AGENT_ID)
    rows = store.query(
        f"SELECT agent_id, max(end_ns) FROM (SELECT {agent_id} AS agent_id, end_ns FROM spans "
        "WHERE end_ns > ? AND end_ns <= ? AND name = ?) WHERE agent_id IS NOT NULL GROUP BY agent_id",
        [*key, lo, hi, sc.HEARTBEAT_SPAN_NAME],
    )
    return {agent: int(end) / _NS for agent, end in rows}


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

"""``AlertData`` over the collector's store: windowed per-agent stats and last heartbeats as of
any ``now`` (live or replayed), through the metric queries that own the SQL.

Heartbeats come from OTLP ``heartbeat`` spans and, when given, from the ``POST /api/heartbeats``
history (``api_heartbeats``); an agent's last heartbeat is the later of the two, so a beat after a
clean exit's ``stopped`` makes the agent live again. The topology rules (edge SLOs, budgets,
drift) read edge outcomes, LLM spend and the edges seen through ``reach_collector.query.topology``; edge
outcomes and spend over long windows come from per-minute counts kept once a minute has settled
(``topology_windows``), the same answer as a scan of the whole window at a fraction of the cost.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from reach_collector.alerting.inputs.data import AgentWindowStats, Heartbeat
from reach_collector.alerting.inputs.topology_windows import DEFAULT_SETTLE_S, EdgeWindows, SpendWindows
from reach_collector.query import topology
from reach_collector.query.causes import window_causes
from reach_collector.query.heartbeats import last_heartbeats
from reach_collector.query.judged import Verdict, judged_by_agent
from reach_collector.query.metrics import agent_window_stats
from reach_collector.query.pricing import PriceTable
from reach_collector.store.base import TraceStore
from reach_collector.text.windows import MAX_WINDOW_S

__all__ = ["StoreAlertData"]

_NS = 1_000_000_000

# now_ns, lookback_s → agent_id → Heartbeat (the last one at or before now)
ApiHeartbeats = Callable[[int, float], Mapping[str, Heartbeat]]


class StoreAlertData:
    def __init__(
        self,
        store: TraceStore,
        *,
        api_heartbeats: ApiHeartbeats | None = None,
        heartbeat_lookback_s: float = 86400.0,
        prices: Mapping[str, Mapping[str, float]] | None = None,
        settle_s: float | None = DEFAULT_SETTLE_S,
        retention_s: float = 0.0,
        max_cached: int = 2_000_000,
    ) -> None:
        """``settle_s``: how long after a minute ends its edge outcomes and spend are kept as
        settled (None: every window scanned at every evaluation); ``retention_s``: the store's
        retention, whose edge is read from the store, never from the cache; ``max_cached``: the
        most (minute, key) counts each cache holds."""
        self._store = store
        self._api = api_heartbeats
        self._lookback = heartbeat_lookback_s
        self._prices = dict(prices or {})
        self._edges = self._spend = None
        if settle_s is not None:
            self._edges = EdgeWindows(store, settle_s, retention_s, max_cached)
            self._spend = SpendWindows(store, settle_s, self._prices, retention_s, max_cached)

    def agent_stats(self, now: float, window_s: float) -> Mapping[str, AgentWindowStats]:
        rows = agent_window_stats(self._store, int(now * _NS), window_s)
        return {
            agent: AgentWindowStats(
                int(row["calls"]),
                int(row["errors"]),
                None if row["p99_ms"] is None else float(row["p99_ms"]),
                row["service"],
            )
            for agent, row in rows.items()
        }

    def causes(self, now: float, window_s: float, agent: str) -> Mapping[str, Any]:
        """The causes of ``agent``'s failed traces over the window (SPEC §17, ``/api/causes``), the
        window held to the API's longest."""
        span = min(window_s, MAX_WINDOW_S)
        return window_causes(self._store, int(now * _NS), span, PriceTable(self._prices), agent=agent)

    def judged(self, now: float, window_s: float, name: str) -> Mapping[str, list[Verdict]]:
        """Per agent, newest first, the evaluations ``name`` made in the window (SPEC §18)."""
        return judged_by_agent(self._store, int(now * _NS), window_s, name)

    def heartbeats(self, now: float) -> Mapping[str, Heartbeat]:
        now_ns = int(now * _NS)
        beats = {
            agent: Heartbeat(seen)
            for agent, seen in last_heartbeats(self._store, now_ns, self._lookback).items()
        }
        if self._api is not None:
            for agent, beat in self._api(now_ns, self._lookback).items():
                known = beats.get(agent)
                if known is None or beat.last_seen >= known.last_seen:  # a stop at that instant wins
                    beats[agent] = beat
        return beats

    def edge_stats(
        self, now: float, windows_s: tuple[float, ...]
    ) -> Mapping[float, Mapping[tuple[str, str], tuple[int, int, int]]]:
        """Per window, per edge: (handoffs, taken on, committed) ending in ``(now − window, now]``."""
        if self._edges is None:
            return topology.edge_window_stats(self._store, int(now * _NS), windows_s)
        return self._edges(int(now * _NS), windows_s)

    def spend(self, now: float, window_s: float, per: str) -> Mapping[str, tuple[float | None, int, int]]:
        """Per agent, user or conversation: (USD or None, tokens, first LLM span's end ns) in the window."""
        hi = int(now * _NS)
        if self._spend is None:
            return topology.spend(self._store, hi - int(window_s * _NS), hi, per, self._prices)
        return self._spend(hi, window_s, per)

    def edges_seen(
        self, since: float, until: float, first: bool = False
    ) -> Mapping[tuple[str, str], tuple[int, str | None, str | None] | None]:
        """The edges with a handoff span ending in ``(since, until]`` (with ``first``: when, in which
        service.version and service the first one ended)."""
        return topology.edges_seen(self._store, int(since * _NS), int(until * _NS), first=first)

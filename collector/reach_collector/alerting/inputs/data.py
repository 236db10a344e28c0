"""What alert rules read: the ``AlertData`` protocol, its row types, and a per-evaluation cache.

Rules never touch the store: they ask an ``AlertData`` for windowed per-agent statistics and last
heartbeats *as of* a given ``now``, so the same rules run live, on a replayed clock, and on fakes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol

from reach_collector.store.base import Heartbeat  # a row type of the store's contract

__all__ = ["AgentWindowStats", "AlertData", "CachedData", "Heartbeat"]


class AgentWindowStats(NamedTuple):
    """One agent's ``invoke_agent`` calls ending in the window ``(now − window, now]``."""

    calls: int
    errors: int
    p99_ms: float | None = None  # linear interpolation (quantile_cont), failed calls included
    service: str | None = None  # the agent's service.name (most frequent in the window)


class AlertData(Protocol):
    """The queries rules need; every answer is as of ``now`` (unix seconds), never later data.

    The live collector answers from DuckDB; replay asks the same questions for past instants.
    A query may raise: the evaluator then leaves that rule's alerts exactly as they were.
    """

    def agent_stats(self, now: float, window_s: float) -> Mapping[str, AgentWindowStats]: ...

    def heartbeats(self, now: float) -> Mapping[str, Heartbeat]: ...


class CachedData:
    """Memoises one evaluation's queries: P0 and P1 share the 1-minute window, so ask once."""

    def __init__(self, inner: AlertData) -> None:
        self._inner = inner
        self._stats: dict[tuple[float, float], Mapping[str, AgentWindowStats]] = {}
        self._beats: dict[float, Mapping[str, Heartbeat]] = {}
        self._other: dict[tuple[Any, ...], Any] = {}

    def __getattr__(self, name: str) -> Any:
        """The inner data's other queries (the topology rules': edge stats, spend, edges seen),
        memoised by their (hashable) arguments, so two rules asking the same ask once."""
        if name.startswith("_"):
            raise AttributeError(name)
        query = getattr(self._inner, name)

        def cached(*args: Any) -> Any:
            key = (name, *args)
            if key not in self._other:
                self._other[key] = query(*args)
            return self._other[key]

        return cached

    def agent_stats(self, now: float, window_s: float) -> Mapping[str, AgentWindowStats]:
        key = (now, window_s)
        if key not in self._stats:
            self._stats[key] = self._inner.agent_stats(now, window_s)
        return self._stats[key]

    def heartbeats(self, now: float) -> Mapping[str, Heartbeat]:
        if now not in self._beats:
            self._beats[now] = self._inner.heartbeats(now)
        return self._beats[now]

"""The edge SLO rule (``type: edge_slo``, SPEC §15): an objective on the commit rate of each
``source → target`` handoff edge, alerted on with the burn-rate rule's multi-window multi-burn-rate
test (``rules.burning``, SRE Workbook table 5-8), paging the **owner of the target agent**.

Commit rate as §11 defines it: committed / handoffs the target took on (accepted, running,
committed, failed), outcomes by the §11 rule; a rejected or never-answered handoff is outside it.
An alert's labels are ``source``, ``target`` and ``agent`` (= the target, so routing finds its
owner and a firing P0 of that agent inhibits it, as for every P1); the owner comes from the
top-level ``owners`` (no owner → the route of the rule's severity, P1 by default).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from reach_collector.alerting.evaluation.state import Sample
from reach_collector.alerting.rules.base import since_breach
from reach_collector.alerting.rules.burn_rate import burning
from reach_collector.sections.rules import EdgeSLORuleConfig
from reach_collector.text.durations import format_duration_s

__all__ = ["EdgeData", "EdgeSLORule", "EdgeSLORuleConfig"]

Edge = tuple[str, str]


class EdgeData(Protocol):
    """What the rule reads (``StoreAlertData`` answers it): per trailing window, per edge,
    (handoffs, taken on, committed) of the handoff spans ending in it."""

    def edge_stats(
        self, now: float, windows_s: tuple[float, ...]
    ) -> Mapping[float, Mapping[Edge, tuple[int, int, int]]]: ...


class EdgeSLORule:
    owner_label: str | None = "target"  # the label naming the agent whose owner is paged

    def __init__(self, config: EdgeSLORuleConfig) -> None:
        self.config = config
        self.name = config.name
        self.severity = config.severity
        self.for_s = config.for_s
        self.keep_firing_for_s = config.keep_firing_for_s
        self.windows = config.windows
        self._all = tuple(sorted({w for pair in config.windows for w in (pair.long_s, pair.short_s)}))

    @property
    def window_s(self) -> float:
        return min((w.long_s for w in self.windows), default=3600.0)

    @property
    def generator_path(self) -> str:
        return f"/api/topology?window={format_duration_s(self.window_s)}"

    def trace_search(self, labels: Mapping[str, str], active_at: float) -> dict[str, str] | None:
        """The target's failed traces since the window that first breached."""
        target = labels.get("target")
        return (
            {"agent": target, "status": "error", "since": since_breach(active_at, self.window_s)}
            if target
            else None
        )

    def samples(self, now: float, data: Any) -> list[Sample]:
        stats = data.edge_stats(now, self._all)

        def counts(window_s: float) -> Mapping[Edge, tuple[int, int]]:
            return {
                edge: (taken, taken - committed) for edge, (_n, taken, committed) in stats[window_s].items()
            }

        found = burning(self.windows, self.config.objective, self.config.min_handoffs, counts)
        out = []
        for (source, target), (burn, window) in sorted(found.items()):
            _n, taken, committed = stats[window.long_s][(source, target)]
            pair = f"{format_duration_s(window.long_s)}/{format_duration_s(window.short_s)}"
            out.append(
                Sample(
                    {"source": source, "target": target, "agent": target},
                    burn,
                    {
                        "summary": f"{source} → {target}: commit-rate error budget burning {burn:.1f}× over "
                        f"{pair} (limit {window.factor:g}×, objective {self.config.objective:.2%})",
                        "value": f"{burn:.4g}",
                        "windows": pair,
                        "commit_rate": f"{committed / taken:.4g}",
                        "taken": str(taken),
                        "committed": str(committed),
                    },
                )
            )
        return out

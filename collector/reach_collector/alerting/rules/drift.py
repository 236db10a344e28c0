"""Topology drift (``type: topology_drift``, SPEC §15): a handoff edge, or a cycle of edges, that
the previous ``baseline`` window (default 7d) never saw is an event, ``ReachTopologyChanged`` by
default, naming the edge and the ``service.version`` (resource attribute) of the span that first
used it. No page by default (severity ``info``: no route); set a severity to route it.

At ``now`` an edge is new when a handoff span on it ended in the last ``window`` (default 1h) and
none did in the ``baseline`` before that window: the alert fires at the first evaluation that sees
it and resolves once its first use is older than ``window`` (then it is in the baseline). A new
edge ``s → t`` makes a new cycle when the graph already leads back from ``t`` to ``s``: a cycle of
old edges alone was in the baseline graph, so every new cycle goes through a new edge.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any, Protocol

from reach_collector.alerting.evaluation.state import Sample, iso
from reach_collector.sections.rules import INFO, DriftRuleConfig
from reach_collector.text.durations import format_duration_s

__all__ = ["INFO", "DriftData", "DriftRule", "DriftRuleConfig", "cycle_through"]

Edge = tuple[str, str]


class DriftData(Protocol):
    """The edges with a handoff span ending in ``(since, until]``; with ``first``, per edge its
    first such span's (end ns, service.version, service)."""

    def edges_seen(
        self, since: float, until: float, first: bool = False
    ) -> Mapping[Edge, tuple[int, str | None, str | None] | None]: ...


def cycle_through(edge: Edge, graph: Mapping[str, set[str]]) -> list[str] | None:
    """The shortest cycle using ``edge`` (``[s, t, …, s]``) in ``graph`` (source → targets), or None."""
    source, target = edge
    if source == target:
        return [source, source]
    back: dict[str, str | None] = {target: None}
    queue = deque([target])
    while queue:
        node = queue.popleft()
        for nxt in sorted(graph.get(node, ())):
            if nxt in back:
                continue
            back[nxt] = node
            if nxt == source:
                path: list[str] = []
                at: str | None = nxt
                while at is not None:
                    path.append(at)
                    at = back[at]
                return [source, *reversed(path)]
            queue.append(nxt)
    return None


class DriftRule:
    for_s = 0.0
    keep_firing_for_s = 0.0
    owner_label: str | None = None  # an event: nobody's page

    def __init__(self, config: DriftRuleConfig) -> None:
        self.config = config
        self.name = config.name
        self.severity = config.severity
        self.window_s = config.window_s

    @property
    def generator_path(self) -> str:
        return f"/api/topology?window={format_duration_s(self.window_s)}"

    def trace_search(self, labels: Mapping[str, str], active_at: float) -> dict[str, str] | None:
        """The traces through the new edge's source since it appeared."""
        source = labels.get("source")
        return {"agent": source, "since": iso(active_at - self.window_s) or ""} if source else None

    def samples(self, now: float, data: Any) -> list[Sample]:
        start = now - self.config.window_s
        recent = data.edges_seen(start, now, True)
        if not recent:
            return []
        baseline = data.edges_seen(start - self.config.baseline_s, start)
        graph: dict[str, set[str]] = {}
        for s, t in (*recent, *baseline):
            graph.setdefault(s, set()).add(t)
        out = []
        for (source, target), seen in sorted(recent.items()):
            if (source, target) in baseline or seen is None:
                continue
            at, version, service = seen
            cycle = cycle_through((source, target), graph)
            shown = version or "(no service.version)"
            what = f"new cycle {' → '.join(cycle)}" if cycle else "new edge"
            annotations = {
                "summary": f"{source} → {target}: {what}, first seen {iso(at / 1e9)} from {shown} "
                f"(not seen in the {format_duration_s(self.config.baseline_s)} before)",
                "value": "1",
                "service_version": version or "",
                "first_seen": iso(at / 1e9) or "",
                "change": "cycle" if cycle else "edge",
            }
            if cycle:
                annotations["cycle"] = " → ".join(cycle)
            labels = {"source": source, "target": target, "service": service or ""}
            out.append(Sample(labels, 1.0, annotations))
        return out

"""The burn-rate rule (``type: burn_rate``): multi-window multi-burn-rate on a success-rate SLO (SRE
Workbook table 5-8), and the ``burning`` test the edge SLO shares."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from reach_collector.alerting.evaluation.state import Sample
from reach_collector.alerting.inputs.data import AlertData
from reach_collector.alerting.rules.base import AgentWindowLinks, agent_labels
from reach_collector.sections.rules import BurnWindow
from reach_collector.text.durations import format_duration_s

__all__ = ["BurnRateRule", "burning"]

K = TypeVar("K", bound=Hashable)  # what a burn is counted under: an agent, an edge


@dataclass(frozen=True)
class BurnRateRule(AgentWindowLinks):
    """Multi-window multi-burn-rate on a success-rate SLO (SRE Workbook table 5-8).

    Breaches when, for any window pair, the error ratio over both the long and the short window
    exceeds ``factor × (1 − objective)``; the short window makes it reset quickly once fixed.
    """

    name: str
    objective: float = 0.99
    windows: tuple[BurnWindow, ...] = ()
    min_calls: int = 5
    owner_label: ClassVar[str | None] = None  # paged by severity, not by owner
    severity: str = "P1"
    for_s: float = 0.0
    keep_firing_for_s: float = 0.0

    @property
    def window_s(self) -> float:
        """The fastest pair's long window (1h in the workbook's table): what a page links to."""
        return min((w.long_s for w in self.windows), default=3600.0)

    def samples(self, now: float, data: AlertData) -> list[Sample]:
        def counts(window_s: float) -> dict[str, tuple[int, int]]:
            return {a: (s.calls, s.errors) for a, s in data.agent_stats(now, window_s).items()}

        out = []
        for agent, (burn, window) in sorted(
            burning(self.windows, self.objective, self.min_calls, counts).items()
        ):
            long, short = data.agent_stats(now, window.long_s), data.agent_stats(now, window.short_s)
            service = long[agent].service or short[agent].service
            pair = f"{format_duration_s(window.long_s)}/{format_duration_s(window.short_s)}"
            out.append(
                Sample(
                    agent_labels(agent, service),
                    burn,
                    {
                        "summary": f"{agent}: error budget burning {burn:.1f}× over {pair} "
                        f"(limit {window.factor:g}×, objective {self.objective:.2%})",
                        "value": f"{burn:.4g}",
                        "windows": pair,
                    },
                )
            )
        return out


def burning(
    windows: tuple[BurnWindow, ...],
    objective: float,
    min_events: int,
    counts: Callable[[float], Mapping[K, tuple[int, int]]],
) -> dict[K, tuple[float, BurnWindow]]:
    """The multi-window multi-burn-rate test (SRE Workbook table 5-8) over any keys: ``counts(w)``
    gives each key's (events, bad events) over the trailing window ``w``. A key breaches when, for
    some window pair, the bad ratio over both the long and the short window exceeds
    ``factor × (1 − objective)`` (windows with fewer than ``min_events`` are no data); the answer
    is its long-window burn rate in the pair that burns fastest, and that pair."""
    budget = 1.0 - objective
    floor = max(min_events, 1)
    found: dict[K, tuple[float, BurnWindow]] = {}
    for window in windows:
        long, short = counts(window.long_s), counts(window.short_s)
        for key, (events, bad) in long.items():
            recent = short.get(key)
            if recent is None or events < floor or recent[0] < floor:
                continue
            long_burn, short_burn = bad / events / budget, recent[1] / recent[0] / budget
            if long_burn > window.factor and short_burn > window.factor:
                best = found.get(key)
                if best is None or long_burn > best[0]:
                    found[key] = (long_burn, window)
    return found

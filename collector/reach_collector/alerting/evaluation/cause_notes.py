"""The cause a page about an agent carries (SPEC §17): annotations ``cause`` (one sentence: the top
cause of the agent's failed traces over the rule's window, with its share) and ``cause_traces`` (up
to 5 example trace ids, comma-separated), on firing alerts of the rules about an agent — P0 success
rate, P1 latency, burn rate, edge SLO (its target), budget per agent.

Computed once per firing episode, when it fires (one bounded ``/api/causes`` read), and kept on the
alert while it fires, so the API, the webhook, Alertmanager and the history's ``firing`` transition
all carry the same words. A read that fails leaves the alert without them (logged); alerting goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from reach_collector.alerting.evaluation.evaluator import Evaluator
from reach_collector.alerting.evaluation.state import AlertState, Transition
from reach_collector.alerting.rules import Rule
from reach_collector.alerting.rules.budget import BudgetRule
from reach_collector.alerting.rules.burn_rate import BurnRateRule
from reach_collector.alerting.rules.edge_slo import EdgeSLORule
from reach_collector.alerting.rules.golden import LatencyRule, SuccessRateRule
from reach_collector.query.causes import sentence

__all__ = ["CAUSE", "CAUSE_TRACES", "CauseFinder", "CauseNotes"]

log = logging.getLogger("reach_collector.alerting")

CAUSE: Final = "cause"
CAUSE_TRACES: Final = "cause_traces"
# (now, window_s, agent) → the /api/causes body for that agent
CauseFinder = Callable[[float, float, str], Mapping[str, Any]]
_ABOUT_AN_AGENT: Final = (SuccessRateRule, LatencyRule, BurnRateRule, EdgeSLORule, BudgetRule)


def notes(body: Mapping[str, Any], agent: str) -> dict[str, str]:
    """The two annotations from a window's causes for ``agent`` (none when nothing failed)."""
    causes = body.get("causes") or []
    if not causes:
        return {}
    top = causes[0]
    return {CAUSE: sentence(top, agent), CAUSE_TRACES: ",".join(top["example_trace_ids"][:5])}


class CauseNotes:
    """Adds the cause to the firing alerts of ``rules`` about an agent, from ``find``."""

    def __init__(self, rules: Sequence[Rule], find: CauseFinder) -> None:
        self._windows = {r.name: float(r.window_s) for r in rules if isinstance(r, _ABOUT_AN_AGENT)}
        self._find = find
        self._kept: dict[tuple[str, float | None], dict[str, str]] = {}  # (fingerprint, fired_at)

    def apply(self, now: float, evaluator: Evaluator, transitions: list[Transition]) -> list[Transition]:
        """Put the cause on every firing alert about an agent (kept from when it fired, found now
        for one that just fired); returns ``transitions`` with it on their ``firing`` ones."""
        firing: dict[str, dict[str, str]] = {}
        live: set[tuple[str, float | None]] = set()
        for alert in evaluator.alerts(AlertState.FIRING):
            window = self._windows.get(alert.alertname)
            agent = alert.labels.get("agent")
            if window is None or not agent:
                continue
            key = (alert.fingerprint, alert.fired_at)
            live.add(key)
            if key not in self._kept:
                self._kept[key] = self._look_up(now, window, agent)
            if self._kept[key]:
                evaluator.annotate(alert.fingerprint, self._kept[key])
                firing[alert.fingerprint] = self._kept[key]
        for key in set(self._kept) - live:  # episodes that ended
            del self._kept[key]
        return [
            replace(t, annotations={**t.annotations, **firing[t.fingerprint]})
            if t.to_state is AlertState.FIRING and t.fingerprint in firing
            else t
            for t in transitions
        ]

    def _look_up(self, now: float, window_s: float, agent: str) -> dict[str, str]:
        try:
            return notes(self._find(now, window_s, agent), agent)
        except Exception as exc:  # a failed read must not stop alerting
            log.warning("alert cause for %s: the causes could not be read: %s", agent, exc)
            return {}

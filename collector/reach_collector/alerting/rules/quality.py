"""The quality SLO (``type: quality``, SPEC §18): an objective on how an agent's answers are judged —
the share of an evaluation's verdicts that are good (a label in ``good_labels``, or a score of at
least ``min_score``) — alerted on with the burn-rate rule's multi-window multi-burn-rate test
(``rules.burning``), paging the **owner of the agent** whose span was evaluated. Status codes play
no part: an agent that answers every question wrongly, politely and without raising, burns it.

An evaluation belongs to the agent of its span, or of its nearest agent ancestor
(``query.judged``). A window with fewer than ``min_evaluations`` verdicts is no data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from reach_collector.alerting.evaluation.state import Sample
from reach_collector.alerting.rules.base import since_breach
from reach_collector.alerting.rules.burn_rate import burning
from reach_collector.query.judged import Verdict, rule_judges_good
from reach_collector.sections.rules import QualityRuleConfig
from reach_collector.text.durations import format_duration_s

__all__ = ["QualityData", "QualityRule", "QualityRuleConfig", "is_good"]


def is_good(verdict: Verdict, good_labels: Sequence[str], min_score: float | None) -> bool:
    """A verdict as the rule judges it (``query.judged.rule_judges_good``, which ``resolved`` uses too)."""
    return rule_judges_good(verdict.score, verdict.label, good_labels, min_score)


def cause(evaluation: str, agent: str, bad: Sequence[Verdict], n: int) -> dict[str, str]:
    """SPEC §17 for a quality alert: the evaluation that failed, with its explanation (the newest
    bad verdict's, and how many were bad), and up to five of the traces judged bad."""
    if not bad:
        return {}
    newest = bad[0]
    if newest.label is not None:
        verdict = newest.label
    else:
        verdict = "bad" if newest.score is None else f"score {newest.score:g}"
    why = f": {newest.explanation}" if newest.explanation else ""
    traces = list(dict.fromkeys(v.trace_id for v in bad if v.trace_id))[:5]
    return {
        "cause": f"{len(bad)} of {agent}'s {n} answers judged bad on {evaluation}; the latest {verdict}{why}",
        "cause_traces": ",".join(traces),
    }


class QualityData(Protocol):
    """What the rule reads (``StoreAlertData`` answers it)."""

    def judged(self, now: float, window_s: float, name: str) -> Mapping[str, list[Verdict]]: ...


@dataclass(frozen=True)
class QualityRule:
    config: QualityRuleConfig
    owner_label: ClassVar[str | None] = "agent"  # the agent whose answers were judged

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def severity(self) -> str:
        return self.config.severity

    @property
    def for_s(self) -> float:
        return self.config.for_s

    @property
    def keep_firing_for_s(self) -> float:
        return self.config.keep_firing_for_s

    @property
    def window_s(self) -> float:
        return min((w.long_s for w in self.config.windows), default=3600.0)

    @property
    def generator_path(self) -> str:
        return f"/api/metrics/quality?window={format_duration_s(self.window_s)}&by=agent"

    def trace_search(self, labels: Mapping[str, str], active_at: float) -> dict[str, str] | None:
        """The agent's traces since the window that first breached (its judged answers among them)."""
        agent = labels.get("agent")
        return {"agent": agent, "since": since_breach(active_at, self.window_s)} if agent else None

    def samples(self, now: float, data: Any) -> list[Sample]:
        c = self.config
        spans = sorted({w for pair in c.windows for w in (pair.long_s, pair.short_s)})
        judged = {w: data.judged(now, w, c.evaluation) for w in spans}

        # (verdicts, bad verdicts) per agent, counted once per window
        tallies = {
            w: {
                agent: (len(verdicts), sum(not is_good(v, c.good_labels, c.min_score) for v in verdicts))
                for agent, verdicts in by_agent.items()
            }
            for w, by_agent in judged.items()
        }

        out = []
        for agent, (burn, window) in sorted(
            burning(c.windows, c.objective, c.min_evaluations, tallies.__getitem__).items()
        ):
            n, bad = tallies[window.long_s][agent]
            pair = f"{format_duration_s(window.long_s)}/{format_duration_s(window.short_s)}"
            good = 1 - bad / n
            judged_bad = [
                v for v in judged[window.long_s][agent] if not is_good(v, c.good_labels, c.min_score)
            ]
            out.append(
                Sample(
                    {"agent": agent, "evaluation": c.evaluation},
                    burn,
                    {
                        "summary": f"{agent}: {c.evaluation} judged good in {good:.1%} of {n} answers over "
                        f"{format_duration_s(window.long_s)}; quality error budget burning {burn:.1f}× over "
                        f"{pair} (limit {window.factor:g}×, objective {c.objective:.2%})",
                        "value": f"{burn:.4g}",
                        "windows": pair,
                        "good_ratio": f"{good:.4g}",
                        "evaluations": str(n),
                        **cause(c.evaluation, agent, judged_bad, n),
                    },
                )
            )
        return out

"""What a quality SLO reads (SPEC §18, rule type ``quality``): the evaluations of one name made in
a window, each with the agent that owns the evaluated span (``evaluations.owners_of``: the span's
agent, else its nearest agent ancestor's) — its score and label, for the rule to judge."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from reach_collector.query.evaluations import LOOKBACK_NS, owners_of
from reach_collector.store.base import TraceStore

__all__ = [
    "DEFAULT_GOOD_LABELS",
    "DEFAULT_JUDGEMENT",
    "DEFAULT_MIN_SCORE",
    "MAX_JUDGED",
    "Judgement",
    "Verdict",
    "judged_by_agent",
    "rule_judges_good",
]

MAX_JUDGED: Final = 200_000  # evaluations one window reads at most (the newest)


class Verdict(NamedTuple):
    """One evaluation as a quality SLO reads it."""

    score: float | None
    label: str | None
    explanation: str | None = None
    trace_id: str | None = None


# What ``quality.default`` judges good when the config says nothing.
DEFAULT_GOOD_LABELS: Final = ("correct", "good", "pass", "positive", "resolved", "yes")
DEFAULT_MIN_SCORE: Final = 0.5
# How long before a handoff ended its trace's evaluation may be stamped and still count (clocks).
_SKEW_NS: Final = 3600 * 1_000_000_000


def rule_judges_good(
    score: float | None, label: str | None, good_labels: Sequence[str], min_score: float | None
) -> bool:
    """How a quality rule judges one verdict: good when its label is one of ``good_labels`` (when
    the rule gives them), else when its score is at least ``min_score``; neither is not good."""
    if good_labels:
        return label in good_labels
    return min_score is not None and score is not None and score >= min_score


@dataclass(frozen=True)
class Judgement:
    """When an evaluation is judged good (SPEC §18): an evaluation a quality rule watches, as that
    rule says (a label in its ``good_labels``, or a score of at least its ``min_score``); any other,
    as ``quality.default`` says (a label in ``good_labels``; with no label, a score of at least
    ``min_score``)."""

    good_labels: tuple[str, ...] = DEFAULT_GOOD_LABELS
    min_score: float = DEFAULT_MIN_SCORE
    # (evaluation name, good labels, min score) of each quality rule
    rules: tuple[tuple[str, tuple[str, ...], float | None], ...] = ()

    def good(self, name: str, score: float | None, label: str | None) -> bool:
        for rule_name, labels, min_score in self.rules:
            if rule_name == name:
                return rule_judges_good(score, label, labels, min_score)
        if label is not None:
            return label in self.good_labels
        return score is not None and score >= self.min_score

    def sql(self) -> tuple[str, list[Any]]:
        """The same test as an SQL condition over the ``evaluations`` table, with its parameters."""
        parts: list[str] = []
        params: list[Any] = []
        for name, labels, min_score in self.rules:
            if labels:
                parts.append(f"(name = ? AND label IN ({_marks(len(labels))}))")
                params += [name, *labels]
            else:
                parts.append("(name = ? AND score >= ?)")
                params += [name, min_score]
        default = f"(label IN ({_marks(len(self.good_labels))}) OR (label IS NULL AND score >= ?))"
        default_params: list[Any] = [*self.good_labels, self.min_score]
        if self.rules:
            default = f"(name NOT IN ({_marks(len(self.rules))}) AND {default})"
            default_params = [*(n for n, _, _ in self.rules), *default_params]
        return "(" + " OR ".join([*parts, default]) + ")", [*params, *default_params]

    def good_traces(self, since_ns: int) -> tuple[str, list[Any]]:
        """A subquery of the trace ids with an evaluation judged good, stamped after ``since_ns``
        (less an hour for clocks): what ``resolved`` counts a handoff by."""
        test, params = self.sql()
        return (
            f"SELECT trace_id FROM evaluations WHERE trace_id IS NOT NULL AND time_ns > ? AND {test}",
            [since_ns - _SKEW_NS, *params],
        )


DEFAULT_JUDGEMENT: Final = Judgement()  # quality.default's defaults, no rule


def _marks(n: int) -> str:
    return ", ".join("?" * max(n, 1))


def judged_by_agent(store: TraceStore, now_ns: int, window_s: float, name: str) -> dict[str, list[Verdict]]:
    """Per agent, newest first, each evaluation ``name`` made in ``(now − window, now]``; an
    evaluation whose span is not found belongs to no agent and is left out."""
    lo = now_ns - int(window_s * 1_000_000_000)
    window = "FROM evaluations WHERE name = ? AND time_ns > ? AND time_ns <= ?"
    newest = f"ORDER BY time_ns DESC LIMIT {MAX_JUDGED}"
    found = store.query(
        f"SELECT trace_id, span_id, response_id, score, label, explanation {window} {newest}",
        [name, lo, now_ns],
    )
    traces = (f"SELECT trace_id {window} AND trace_id IS NOT NULL", [name, lo, now_ns])
    landed = owners_of(store, [(t, s, r) for t, s, r, *_ in found], lo - LOOKBACK_NS, traces)
    out: dict[str, list[Verdict]] = {}
    for where, (trace_id, _span, _response, score, label, explanation) in zip(landed, found, strict=True):
        if where.agent is not None:
            out.setdefault(where.agent, []).append(Verdict(score, label, explanation, trace_id))
    return out

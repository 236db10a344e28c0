"""Replay: evaluate the rules over a past time range on a simulated clock and return every
transition. Pure (§11): a fresh evaluator, no notification, no history written.

What one request may cost is bounded before any work: steps × rules evaluations at most
``max_evaluations`` (``alerting.replay_max_evaluations``), a step no shorter than the evaluation
interval; and the loop stops at the next step once ``cancelled()`` says so (the client went away).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from reach_collector.alerting.config import REPLAY_MAX_EVALUATIONS
from reach_collector.alerting.evaluation.evaluator import Evaluator
from reach_collector.alerting.evaluation.state import Transition, iso
from reach_collector.alerting.inputs.data import AlertData
from reach_collector.alerting.rules import Rule
from reach_collector.config import ConfigError, parse_duration
from reach_collector.text.times import parse_time_ns

__all__ = [
    "MAX_EVALUATIONS",
    "ReplayCancelled",
    "ReplayResult",
    "parse_replay_request",
    "replay",
    "replay_steps",
]

log = logging.getLogger("reach_collector.alerting")

# Rule evaluations per request (steps × rules) unless alerting.replay_max_evaluations says: 3.5
# days at 15 s with the three default rules would be 60 000, so a long range wants a larger step.
MAX_EVALUATIONS: Final = REPLAY_MAX_EVALUATIONS
_SETTING: Final = "alerting.replay_max_evaluations"


class ReplayCancelled(Exception):
    """The replay stopped before its last step because ``cancelled()`` said so."""

    def __init__(self, done: int, steps: int) -> None:
        super().__init__(f"replay stopped after {done} of {steps} steps")
        self.done, self.steps = done, steps


@dataclass(frozen=True)
class ReplayResult:
    transitions: list[Transition]
    errors: list[dict[str, Any]]
    steps: int

    def to_dict(self) -> dict[str, Any]:
        """The ``POST /api/alerts/replay`` body (§9), with evaluation errors and the step count."""
        return {
            "transitions": [t.to_dict() for t in self.transitions],
            "evaluations": self.steps,
            "errors": self.errors,
        }


def replay_steps(since: float, until: float, step: float) -> int:
    """How many evaluations ``since, since + step, …, ≤ until`` is; ValueError for a bad range."""
    if not step > 0:
        raise ValueError("step must be greater than 0")
    if until < since:
        raise ValueError("until must not be before since")
    return math.floor((until - since) / step + 1e-9) + 1


def _check_cost(steps: int, rules: int, since: float, until: float, max_evaluations: int) -> None:
    cost = steps * rules
    if cost <= max_evaluations:
        return
    affordable = max_evaluations // max(rules, 1)
    if affordable >= 2:
        advice = f"use a step of at least {math.ceil((until - since) / (affordable - 1))}s or a shorter range"
    else:
        advice = f"raise {_SETTING} or replay one instant"
    raise ValueError(
        f"replay would cost {cost} evaluations ({steps} steps × {rules} rules), {cost - max_evaluations} "
        f"beyond the cap: at most {max_evaluations} per request ({_SETTING}); {advice}"
    )


def replay(
    rules: Sequence[Rule],
    data: AlertData,
    since: float,
    until: float,
    step: float,
    *,
    max_evaluations: int = MAX_EVALUATIONS,
    cancelled: Callable[[], bool] | None = None,
) -> ReplayResult:
    """Evaluate at ``since, since + step, …, ≤ until`` starting from no alerts at all. ValueError
    before any work when it would cost more than ``max_evaluations``; ReplayCancelled as soon as
    ``cancelled()`` is true (checked before each step)."""
    steps = replay_steps(since, until, step)
    _check_cost(steps, len(rules), since, until, max_evaluations)
    evaluator = Evaluator(rules)
    transitions: list[Transition] = []
    errors: list[dict[str, Any]] = []
    for i in range(steps):
        if cancelled is not None and cancelled():
            log.info("replay stopped after %d of %d steps: its client went away", i, steps)
            raise ReplayCancelled(i, steps)
        now = since + i * step
        transitions.extend(evaluator.evaluate(now, data))
        for name, health in evaluator.health.items():
            if health.health == "err":
                errors.append({"time": iso(now), "alertname": name, "error": health.last_error})
    return ReplayResult(transitions, errors, steps)


def _instant(value: Any, key: str, now_s: float) -> float:
    """ISO-8601 (naive = UTC), unix nanoseconds (int or digit string) or a lookback → unix seconds."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"{key}: expected an ISO-8601 time or unix nanoseconds, got {value!r:.60}")
    try:
        return parse_time_ns(value, now_s) / 1e9
    except ValueError as exc:
        raise ValueError(f"{key}: expected an ISO-8601 time or unix nanoseconds ({exc})") from None


def parse_replay_request(
    body: Mapping[str, Any], interval_s: float, now_s: float = 0.0
) -> tuple[float, float, float]:
    """``{since, until, step?}`` → (since, until, step) in seconds; ValueError says what is wrong.
    ``step`` defaults to the evaluation interval and may not be shorter: the live loop never
    evaluates more often, so a shorter step would show what could not have happened."""
    for required in ("since", "until"):
        if required not in body:
            raise ValueError(f"{required}: required (ISO-8601 or unix nanoseconds)")
    since, until = _instant(body["since"], "since", now_s), _instant(body["until"], "until", now_s)
    step = interval_s
    if body.get("step") is not None:
        try:
            step = parse_duration(body["step"], "step")
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        if step < interval_s:
            raise ValueError(
                f"step: must be at least the evaluation interval ({interval_s:g}s), got {body['step']!r:.40}"
            )
    return since, until, step

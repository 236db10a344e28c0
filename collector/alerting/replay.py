"""Replay: evaluate the rules over a past time range on a simulated clock and return every
transition. Pure (§11): a fresh evaluator, no notification, no history written.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Final

from reach_collector.alerting.data import AlertData
from reach_collector.alerting.evaluator import Evaluator
from reach_collector.alerting.rules import Rule
from reach_collector.alerting.state import Transition, iso
from reach_collector.config import ConfigError, parse_duration

__all__ = ["MAX_STEPS", "ReplayResult", "parse_replay_request", "replay"]

MAX_STEPS: Final = 20_000  # 3.5 days at 15 s; a bigger range needs a bigger step


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


def replay(rules: Sequence[Rule], data: AlertData, since: float, until: float, step: float) -> ReplayResult:
    """Evaluate at ``since, since + step, …, ≤ until`` starting from no alerts at all."""
    if step <= 0:
        raise ValueError("step must be greater than 0")
    if until < since:
        raise ValueError("until must not be before since")
    steps = math.floor((until - since) / step + 1e-9) + 1
    if steps > MAX_STEPS:
        raise ValueError(f"{steps} evaluations requested; at most {MAX_STEPS} (use a larger step)")
    evaluator = Evaluator(rules)
    transitions: list[Transition] = []
    errors: list[dict[str, Any]] = []
    for i in range(steps):
        now = since + i * step
        transitions.extend(evaluator.evaluate(now, data))
        for name, health in evaluator.health.items():
            if health.health == "err":
                errors.append({"time": iso(now), "alertname": name, "error": health.last_error})
    return ReplayResult(transitions, errors, steps)


def _instant(value: Any, key: str) -> float:
    """ISO-8601 (naive = UTC) or unix nanoseconds (int or digit string) → unix seconds."""
    if isinstance(value, bool):
        raise ValueError(f"{key}: expected an ISO-8601 time or unix nanoseconds, got {value!r}")
    if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
        return int(value) / 1e9
    if isinstance(value, str):
        try:
            stamp = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            return (stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)).timestamp()
    raise ValueError(f"{key}: expected an ISO-8601 time or unix nanoseconds, got {value!r}")


def parse_replay_request(body: Mapping[str, Any], default_step_s: float) -> tuple[float, float, float]:
    """``{since, until, step?}`` → (since, until, step) in seconds; ValueError says what is wrong."""
    for required in ("since", "until"):
        if required not in body:
            raise ValueError(f"{required}: required (ISO-8601 or unix nanoseconds)")
    since, until = _instant(body["since"], "since"), _instant(body["until"], "until")
    step = default_step_s
    if body.get("step") is not None:
        try:
            step = parse_duration(body["step"], "step")
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
    return since, until, step

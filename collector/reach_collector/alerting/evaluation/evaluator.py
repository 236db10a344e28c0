"""One evaluation of every rule at an injected ``now``: Prometheus's ``Eval(now, query)``.

A rule whose query raises (or returns colliding label sets) changes no state: its alerts stay as
they were and the error is kept as the rule's health, as Prometheus does.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from reach_collector.alerting.evaluation.state import Alert, AlertState, Transition, advance
from reach_collector.alerting.inputs.data import AlertData, CachedData
from reach_collector.alerting.rules import Rule

__all__ = ["Evaluator", "RuleHealth"]

log = logging.getLogger("reach_collector.alerting")


@dataclass
class RuleHealth:
    """The last evaluation of one rule: ``ok``, ``err`` (with the error) or ``unknown``."""

    health: str = "unknown"
    last_error: str | None = None
    last_evaluated: float | None = None


class Evaluator:
    """Holds each rule's active alerts; ``evaluate(now, data)`` advances them all."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        names = [r.name for r in rules]
        if len(set(names)) != len(names):
            raise ValueError(f"rule names must be unique, got {names}")
        self.rules = list(rules)
        self._active: dict[str, dict[str, Alert]] = {r.name: {} for r in rules}
        self.health: dict[str, RuleHealth] = {r.name: RuleHealth() for r in rules}

    def evaluate(self, now: float, data: AlertData) -> list[Transition]:
        """Evaluate every rule at ``now``; return the transitions in rule order."""
        cached = CachedData(data)
        transitions: list[Transition] = []
        for rule in self.rules:
            health = self.health[rule.name]
            health.last_evaluated = now
            try:
                samples = rule.samples(now, cached)
                transitions.extend(
                    advance(
                        self._active[rule.name],
                        samples,
                        now,
                        alertname=rule.name,
                        severity=rule.severity,
                        for_s=rule.for_s,
                        keep_firing_for_s=rule.keep_firing_for_s,
                    )
                )
            except Exception as exc:  # a failed query must not stop the other rules
                health.health, health.last_error = "err", f"{type(exc).__name__}: {exc}"
                log.warning("alert rule %s: evaluation failed, state unchanged: %s", rule.name, exc)
                continue
            health.health, health.last_error = "ok", None
        return transitions

    def alerts(self, state: AlertState | None = None) -> list[Alert]:
        """Snapshots of the pending, firing and recently resolved alerts (optionally one state)."""
        out = [
            alert.snapshot()
            for rule in self.rules
            for alert in self._active[rule.name].values()
            if state is None or alert.state is state
        ]
        out.sort(key=lambda a: (a.severity, a.alertname, a.active_at, a.fingerprint))
        return out

    def restore(self, alerts: Iterable[Alert]) -> int:
        """Adopt pending and firing alerts persisted before a restart (Prometheus restores its
        ``for`` state likewise); the next evaluation then continues or resolves them. Alerts of
        rules that no longer exist are ignored. Returns how many were restored."""
        restored = 0
        for alert in alerts:
            active = self._active.get(alert.alertname)
            if active is None or alert.state not in (AlertState.PENDING, AlertState.FIRING):
                continue
            if alert.fingerprint not in active:
                active[alert.fingerprint] = alert.snapshot()
                restored += 1
        return restored

    def annotate(self, fingerprint: str, annotations: Mapping[str, str]) -> None:
        """Add ``annotations`` to an active alert (until its rule's next sample replaces them)."""
        for active in self._active.values():
            if fingerprint in active:
                active[fingerprint].annotations.update(annotations)
                return

    def find(self, fingerprint: str) -> Alert | None:
        for active in self._active.values():
            if fingerprint in active:
                return active[fingerprint].snapshot()
        return None

"""The alert engine: evaluation → history → notification on an injected clock, no threads.

The collector's loop calls ``tick(now)`` every ``interval`` (and may call ``flush(now)`` sooner,
at ``next_wakeup()``, so retries keep their backoff). API handlers call ``acknowledge``,
``alerts``, ``oncall``, ``agents`` and ``replay``; a lock keeps them consistent with a tick.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, NamedTuple

from reach_collector.alerting.config import AlertingSetup, from_settings
from reach_collector.alerting.evaluation.build import build_rules
from reach_collector.alerting.evaluation.cause_notes import CauseFinder, CauseNotes
from reach_collector.alerting.evaluation.evaluator import Evaluator
from reach_collector.alerting.evaluation.history import Acknowledgement, AlertHistory, MemoryHistory
from reach_collector.alerting.evaluation.replay import ReplayResult, replay
from reach_collector.alerting.evaluation.state import Alert, AlertState, Transition
from reach_collector.alerting.inputs.data import AlertData
from reach_collector.alerting.inputs.store_data import StoreAlertData
from reach_collector.alerting.notify.delivery import Backoff, DeliveryAttempt
from reach_collector.alerting.notify.links import AlertLinks
from reach_collector.alerting.notify.log_lines import log_ack, log_attempt, log_transition
from reach_collector.alerting.notify.pipeline import NotificationPipeline
from reach_collector.alerting.notify.pusher import AlertmanagerPusher
from reach_collector.alerting.notify.webhook import HttpSender, Sender
from reach_collector.alerting.oncall.rotation import oncall_report
from reach_collector.alerting.rules import Rule, agent_statuses
from reach_collector.config import Settings

__all__ = ["STATE_VALUES", "AckResult", "AlertEngine", "build_engine"]

log = logging.getLogger("reach_collector.alerting")

# reach_alert_state gauge values (Prometheus's ALERTS has one series per state; one gauge is simpler)
STATE_VALUES: Final = {
    AlertState.INACTIVE: 0.0,
    AlertState.RESOLVED: 0.0,
    AlertState.PENDING: 1.0,
    AlertState.FIRING: 2.0,
}


class AckResult(NamedTuple):
    """An acknowledged alert; ``already`` when an earlier ack of this firing episode stands
    (``acknowledged_by`` is then who acked first)."""

    alert: Alert
    acknowledged_by: str
    already: bool


class AlertEngine:
    def __init__(
        self,
        setup: AlertingSetup,
        data: AlertData,
        *,
        sender: Sender | None = None,
        history: AlertHistory | None = None,
        clock: Callable[[], float] = time.time,
        external_url: str = "http://127.0.0.1:4318",
        backoff: Backoff | None = None,
        rules: Sequence[Rule] | None = None,
        on_transition: Sequence[Callable[[Transition], None]] = (),
        logger: logging.Logger | None = None,
        causes: CauseFinder | None = None,
    ) -> None:
        self.setup = setup
        self.data = data
        self.clock = clock
        self.history: AlertHistory = history if history is not None else MemoryHistory()
        self.rules = list(rules) if rules is not None else build_rules(setup.alerting)
        self.evaluator = Evaluator(self.rules)
        # firing alerts about an agent carry its top cause (SPEC §17), read where the spans are
        self.cause_notes = CauseNotes(self.rules, causes) if causes is not None else None
        self._log = logger or log
        sender = sender if sender is not None else HttpSender()
        self.links = AlertLinks(external_url, self.rules)
        # Rules that page an agent's owner name the label that holds the agent (edge SLO: target).
        owner_labels = {r.name: r.owner_label for r in self.rules if r.owner_label}
        am_url = setup.alerting.alertmanager_url
        self.pipeline = NotificationPipeline(
            setup,
            sender,
            record=self._record_delivery,
            external_url=external_url,
            backoff=backoff,
            paging=am_url is None,  # with a real Alertmanager, it pages; we keep P2's action
            links=self.links,
            logger=self._log,
            owner_of=lambda a: a.labels.get(owner_labels.get(a.alertname, ""), None),
        )
        self.pusher = (
            AlertmanagerPusher(
                am_url,
                sender,
                interval_s=setup.alerting.interval_s,
                external_url=external_url,
                links=self.links,
                record=self._record_delivery,
            )
            if am_url
            else None
        )
        self._listeners = list(on_transition)  # e.g. the /metrics alert-state gauges
        self.last_tick: float | None = None
        self._lock = threading.Lock()

    @property
    def interval_s(self) -> float:
        return self.setup.alerting.interval_s

    def tick(self, now: float | None = None) -> list[Transition]:
        """Evaluate every rule at ``now``, record the transitions, send what is owed.

        Call from one loop thread. HTTP happens outside the lock, so API calls (ack, list) never
        wait on a slow receiver."""
        with self._lock:
            now = self.clock() if now is None else now
            transitions = self.evaluator.evaluate(now, self.data)
            if self.cause_notes is not None:
                transitions = self.cause_notes.apply(now, self.evaluator, transitions)
            for t in transitions:
                self.history.record_transition(t)
                for listener in self._listeners:
                    listener(t)
                log_transition(self._log, t)
            alerts = self.evaluator.alerts()
            self.pipeline.plan(now, alerts)
            self.last_tick = now
        if self.pusher is not None:
            self.pusher.push(now, alerts)
        self.pipeline.flush(now)
        return transitions

    def flush(self, now: float | None = None) -> list[DeliveryAttempt]:
        """Attempt due retries without evaluating (from the loop thread, like ``tick``)."""
        return self.pipeline.flush(self.clock() if now is None else now)

    def next_wakeup(self) -> float | None:
        """When the loop should call again: the next evaluation, a due retry or a held message."""
        candidates = [self.pipeline.next_due()]
        if self.last_tick is not None:
            candidates.append(self.last_tick + self.interval_s)
        return min((c for c in candidates if c is not None), default=None)

    def restore(self, alerts: Sequence[Alert], acks: Mapping[tuple[str, float | None], str]) -> int:
        """Pick up persisted pending/firing alerts (and their acks, keyed by fingerprint and
        fired_at) at start. A restored firing alert is announced once more on the next tick —
        at-least-once across restarts — but its ack still stops repeats and escalation."""
        with self._lock:
            restored = self.evaluator.restore(alerts)
            for alert in alerts:
                by = acks.get((alert.fingerprint, alert.fired_at))
                if by is not None and alert.state is AlertState.FIRING:
                    self.pipeline.acknowledge(alert, by)
            return restored

    def acknowledge(
        self, fingerprint: str, by: str, comment: str | None = None, now: float | None = None
    ) -> AckResult | None:
        """Ack a firing alert (stops repeats and escalation); None if no such firing alert. Acking
        an episode again changes nothing and says who acked it first."""
        with self._lock:
            alert = self.evaluator.find(fingerprint)
            if alert is None or alert.state is not AlertState.FIRING:
                return None
            earlier = self.pipeline.acknowledged_by(alert)
            if earlier is not None:
                return AckResult(alert, earlier, True)
            self.pipeline.acknowledge(alert, by)
            now = self.clock() if now is None else now
            self.history.record_ack(Acknowledgement(fingerprint, by, now, alert.fired_at))
        log_ack(self._log, alert.alertname, alert.severity, alert.labels, fingerprint, by=by, comment=comment)
        return AckResult(alert, by, False)

    def alerts(self, state: str | None = None) -> dict[str, Any]:
        """The ``GET /api/alerts`` body (§9); ``state`` is pending, firing or resolved."""
        wanted = None
        if state:
            if state not in ("pending", "firing", "resolved"):
                raise ValueError(f"state: expected pending, firing or resolved, got {state!r}")
            wanted = AlertState(state)
        with self._lock:
            found = self.evaluator.alerts(wanted)
            return {"alerts": [a.to_dict(self.pipeline.acknowledged_by(a)) for a in found]}

    def state_gauges(self) -> list[tuple[dict[str, str], float]]:
        """``reach_alert_state{alertname,severity,agent}`` samples: 1 pending, 2 firing, 0 resolved."""
        with self._lock:
            alerts = self.evaluator.alerts()
        return [
            (
                {"alertname": a.alertname, "severity": a.severity, "agent": a.labels.get("agent", "")},
                STATE_VALUES[a.state],
            )
            for a in alerts
        ]

    def oncall(self, at: float | None = None) -> dict[str, Any]:
        """The ``GET /api/oncall`` body at ``at`` (default now), with why each person is on call."""
        return oncall_report(self.setup.schedules, self.clock() if at is None else at)

    def agents(self, now: float | None = None) -> dict[str, Any]:
        return agent_statuses(
            self.data, self.clock() if now is None else now, self.setup.alerting.heartbeat.after_s
        )

    def _record_delivery(self, attempt: DeliveryAttempt) -> None:
        self.history.record_delivery(attempt)
        log_attempt(self._log, attempt)

    def replay(
        self,
        since: float,
        until: float,
        step: float | None = None,
        data: AlertData | None = None,
        *,
        cancelled: Callable[[], bool] | None = None,
    ) -> ReplayResult:
        """Pure replay with this engine's rules (fresh state; touches nothing of the live engine);
        at most ``alerting.replay_max_evaluations`` rule evaluations; stops with ReplayCancelled
        once ``cancelled()`` is true."""
        return replay(
            self.rules,
            data or self.data,
            since,
            until,
            step or self.interval_s,
            max_evaluations=self.setup.alerting.replay_max_evaluations,
            cancelled=cancelled,
        )


def build_engine(
    settings: Settings,
    data: AlertData,
    *,
    history: AlertHistory | None = None,
    sender: Sender | None = None,
    clock: Callable[[], float] = time.time,
    external_url: str | None = None,
    on_transition: Sequence[Callable[[Transition], None]] = (),
) -> AlertEngine:
    """The engine for a collector's settings (raises ConfigError naming the file and key)."""
    setup = from_settings(settings)
    for warning in setup.warnings:
        log.warning("%s: %s", settings.source, warning)
    host = f"[{settings.host}]" if ":" in settings.host else settings.host  # an IPv6 literal
    url = external_url or f"http://{host}:{settings.port}"
    return AlertEngine(
        setup,
        data,
        sender=sender,
        history=history,
        clock=clock,
        external_url=url,
        on_transition=on_transition,
        causes=data.causes if isinstance(data, StoreAlertData) else None,
    )

"""The notification pipeline: route → inhibit → dedup/repeat/escalate → retry → record.

It reconciles, like Alertmanager's dispatcher: each ``process(now, alerts)`` looks at the firing
and recently resolved alerts and sends only what is owed — one message on firing, one on resolve
(to everyone paged), a P0 repeat every ``repeat`` and the next escalation step after
``escalate_after`` until acknowledged. A P1 is muted while a P0 fires for the same agent (muted
alerts are re-examined each time, so a P1 still firing when the P0 resolves is then sent). P2's
action is a structured log line plus ``POST {registry}/deregister``; it pages nobody. An alert a rule
routes to an owner (``owner_of`` names the agent, e.g. an edge SLO's target) takes that agent's
``owners`` route when it has one, else its severity's.

What is owed to one receiver goes out grouped, as Alertmanager groups it (grouping.py): the alerts
that come due together for a person share one webhook message naming each of them. The registry's
deregistrations are bounded to ``registry_per_minute`` calls; the rest wait their turn, and one
whose heartbeat resumes first is never sent.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from reach_collector.alerting.config import AlertingSetup, Route, Targets
from reach_collector.alerting.evaluation.state import Alert, AlertState
from reach_collector.alerting.notify.delivery import Backoff, Delivery, DeliveryAttempt, Record, RetryQueue
from reach_collector.alerting.notify.grouping import Grouper, Message, Notice
from reach_collector.alerting.notify.links import AlertLinks
from reach_collector.alerting.notify.log_lines import log_escalation
from reach_collector.alerting.notify.webhook import PagedAlert, Sender, webhook_payload, with_path
from reach_collector.alerting.oncall.rotation import on_call
from reach_collector.text.redact_url import redact_url

__all__ = ["INHIBIT_RULES", "NotificationPipeline", "inhibited"]

log = logging.getLogger("reach_collector.alerting")

# (source severity, target severity, labels that must be equal): Alertmanager inhibit_rules.
INHIBIT_RULES: Final = (("P0", "P1", ("agent",)),)
REGISTRY: Final = "registry"  # the recipient of deregistrations


def inhibited(alerts: Sequence[Alert]) -> set[str]:
    """Fingerprints muted by a *firing* source alert under ``INHIBIT_RULES``."""
    muted: set[str] = set()
    for source_sev, target_sev, equal in INHIBIT_RULES:
        sources = {
            tuple(a.labels.get(k, "") for k in equal)
            for a in alerts
            if a.severity == source_sev and a.state is AlertState.FIRING
        }
        for a in alerts:
            if a.severity == target_sev and tuple(a.labels.get(k, "") for k in equal) in sources:
                muted.add(a.fingerprint)
    return muted


@dataclass
class _Episode:
    """What has been sent for one firing episode of one alert (keyed by fingerprint + fired_at)."""

    fired_at: float | None
    sent_firing: bool = False
    sent_resolved: bool = False
    step: int = 0
    step_at: float = 0.0
    last_sent: float = 0.0
    acked_by: str | None = None
    paged: dict[str, str] = field(default_factory=dict)  # user → via, for the resolve message
    actioned: bool = False
    action_resolved: bool = False
    muted_noted: bool = False


class NotificationPipeline:
    """Turns alert snapshots into deliveries. ``paging=False`` keeps only P2's action (used when a
    real Alertmanager does the paging)."""

    def __init__(
        self,
        setup: AlertingSetup,
        sender: Sender,
        *,
        record: Record | None = None,
        external_url: str = "http://127.0.0.1:4318",
        backoff: Backoff | None = None,
        paging: bool = True,
        links: AlertLinks | None = None,
        logger: logging.Logger | None = None,
        owner_of: Callable[[Alert], str | None] | None = None,
    ) -> None:
        self.setup = setup
        self.owner_of = owner_of
        config = setup.alerting
        bound = {REGISTRY: config.registry_per_minute}
        self.queue = RetryQueue(sender, record or (lambda attempt: None), backoff, per_minute=bound)
        self.groups = Grouper(config.group_by, config.group_wait_s, config.group_interval_s)
        self.external_url = external_url.rstrip("/")
        self.paging = paging
        self.links = links or AlertLinks(self.external_url)
        self._log = logger or log
        self._episodes: dict[str, _Episode] = {}
        self._registry_waiting = 0  # as last logged

    # -- public ----------------------------------------------------------------------------------

    def process(self, now: float, alerts: Sequence[Alert]) -> list[DeliveryAttempt]:
        """Plan what is owed for these alerts, then attempt every due delivery."""
        self.plan(now, alerts)
        return self.flush(now)

    def plan(self, now: float, alerts: Sequence[Alert]) -> None:
        """Queue what is owed for these alerts (no I/O besides the P2 log line)."""
        live = [a for a in alerts if a.state in (AlertState.FIRING, AlertState.RESOLVED)]
        muted = inhibited(alerts)
        for alert in live:
            episode = self._episode(alert)
            route = self.route(alert)
            if route is None:
                continue
            if route.action == "deregister":
                self._action(alert, episode, now)
            if not (route.page and self.paging):
                continue
            if alert.fingerprint in muted:
                if not episode.muted_noted:
                    episode.muted_noted = True
                    self._log.info("alert %s %s inhibited by a firing P0", alert.alertname, alert.labels)
                continue
            self._page(alert, route, episode, now)
        keep = {a.fingerprint for a in live}
        self._episodes = {fp: e for fp, e in self._episodes.items() if fp in keep}

    def flush(self, now: float) -> list[DeliveryAttempt]:
        """Send the group messages whose time has come, then attempt every due delivery (retries
        too, between evaluations)."""
        for message in self.groups.due(now, self._owed):
            self._submit(message, now)
        attempts = self.queue.flush(now)
        self._note_registry_backlog()
        return attempts

    def next_due(self) -> float | None:
        """When ``flush`` has something to do next: a retry, a held group message, a registry slot."""
        return min(
            (t for t in (self.queue.next_due(), self.groups.next_due()) if t is not None), default=None
        )

    def route(self, alert: Alert) -> Route | None:
        """The owner's route of the agent the alert's rule routes by, else the severity's."""
        agent = self.owner_of(alert) if self.owner_of is not None else None
        owner = self.setup.owners.get(agent) if agent else None
        return owner if owner is not None else self.setup.routing.get(alert.severity)

    def acknowledge(self, alert: Alert, by: str) -> None:
        """Stop repeats and escalation of this firing episode."""
        self._episode(alert).acked_by = by

    def acknowledged_by(self, alert: Alert) -> str | None:
        episode = self._episodes.get(alert.fingerprint)
        return episode.acked_by if episode and episode.fired_at == alert.fired_at else None

    # -- stages ----------------------------------------------------------------------------------

    def _episode(self, alert: Alert) -> _Episode:
        episode = self._episodes.get(alert.fingerprint)
        if episode is None or episode.fired_at != alert.fired_at:
            episode = self._episodes[alert.fingerprint] = _Episode(alert.fired_at)
        return episode

    def _page(self, alert: Alert, route: Route, ep: _Episode, now: float) -> None:
        policy = self.setup.escalation_policies.get(route.escalation_policy or "")
        if alert.state is AlertState.RESOLVED:
            if ep.sent_firing and not ep.sent_resolved:
                ep.sent_resolved = True
                for user, via in ep.paged.items():
                    self._send(alert, user, via, "resolved", ep.step, now)
            return
        if not ep.sent_firing:
            ep.sent_firing, ep.step_at, ep.last_sent = True, now, now
            self._notify(alert, self._targets(route, 0), "firing", ep, now)
            return
        if ep.acked_by is not None:
            return
        if policy is not None and ep.step + 1 < len(policy.steps):
            after = policy.steps[ep.step].escalate_after_s
            if after is not None and now - ep.step_at >= after:
                ep.step += 1
                ep.step_at, ep.last_sent = now, now
                targets = self._targets(route, ep.step)
                log_escalation(
                    self._log, alert.alertname, alert.severity, alert.labels, alert.fingerprint,
                    policy=policy.name, step=ep.step + 1, steps=len(policy.steps), targets=_describe(targets),
                )  # fmt: skip
                self._notify(alert, targets, "escalation", ep, now)
                return
        repeat = self.setup.alerting.repeat_s
        if alert.severity == "P0" and repeat > 0 and now - ep.last_sent >= repeat:
            ep.last_sent = now
            self._notify(alert, self._targets(route, ep.step), "repeat", ep, now)

    def _targets(self, route: Route, step: int) -> Targets | None:
        policy = self.setup.escalation_policies.get(route.escalation_policy or "")
        if policy is not None:
            return policy.steps[min(step, len(policy.steps) - 1)].notify
        return route.notify

    def _notify(self, alert: Alert, targets: Targets | None, kind: str, ep: _Episode, now: float) -> None:
        if targets is None:
            return
        people: dict[str, str] = {}
        if targets.schedule is not None:
            who = on_call(self.setup.schedules[targets.schedule], now)
            if who is None:
                self._undeliverable(alert, f"schedule:{targets.schedule}", kind, now, "nobody is on call")
            else:
                people[who] = f"schedule:{targets.schedule}"
        for user in targets.users:
            people.setdefault(user, "users")
        for user, via in people.items():
            ep.paged.setdefault(user, via)
            self._send(alert, user, via, kind, ep.step, now)

    def _send(self, alert: Alert, user: str, via: str, kind: str, step: int, now: float) -> None:
        """Owe ``user`` this notification: it joins the alert's group for that user."""
        contact = self.setup.users.get(user)
        if contact is None or contact.webhook is None:
            notice = Notice(alert, user, via, kind, step, None, f"user {user!r} has no webhook configured")
        else:
            notice = Notice(alert, user, via, kind, step, contact.webhook)
        self.groups.add(notice, now)

    def _owed(self, notice: Notice) -> bool:
        """A held repeat or escalation is dropped once its episode is acknowledged or over."""
        if notice.kind not in ("repeat", "escalation"):
            return True
        episode = self._episodes.get(notice.alert.fingerprint)
        return episode is not None and episode.fired_at == notice.alert.fired_at and episode.acked_by is None

    def _submit(self, message: Message, now: float) -> None:
        alerts = message.alerts
        agents = {a.labels.get("agent", "") for a in alerts}
        delivery = Delivery(
            message.kind,
            message.url or "",
            {},
            ",".join(a.fingerprint for a in alerts),
            ",".join(sorted({a.alertname for a in alerts})),
            message.receiver,
            created_at=now,
            agent=agents.pop() if len(agents) == 1 else "",
        )
        if message.url is None:
            self.queue.undeliverable(delivery, now, message.error or "no destination")
            return
        recipient = {
            "user": message.receiver,
            "via": message.via,
            "reason": message.kind,
            "step": message.step,
            "severity": message.severity,
        }
        delivery.body = webhook_payload(
            [PagedAlert(a, self.links.generator(a), self.links.annotations(a)) for a in alerts],
            receiver=message.receiver,
            external_url=self.external_url,
            group_key=message.group_key,
            group_labels=message.group_labels,
            recipient=recipient,
        )
        self.queue.submit(delivery, now)

    def _action(self, alert: Alert, ep: _Episode, now: float) -> None:
        registry = self.setup.alerting.registry
        agent = alert.labels.get("agent", "")
        firing = alert.state is AlertState.FIRING
        if firing and not ep.actioned:
            ep.actioned = True
        elif not firing and ep.actioned and not ep.action_resolved:
            ep.action_resolved = True
        else:
            return
        line = {
            "event": "alert.action",
            "action": "deregister" if firing else "none (heartbeat resumed)",
            "alertname": alert.alertname,
            "severity": alert.severity,
            "agent": agent,
            "state": alert.state.value,
            "fingerprint": alert.fingerprint,
            "registry": redact_url(registry) if registry else None,
            "paged": False,
            "summary": alert.annotations.get("summary", ""),
        }
        self._log.warning("%s", json.dumps(line, sort_keys=True))
        if firing and registry:
            body = {"agent_id": agent}
            url = with_path(registry, "deregister")
            self.queue.submit(self._delivery(alert, "deregister", url, body, REGISTRY, now), now)
        elif not firing:  # still waiting for a registry slot: the agent is back, leave it registered
            self.queue.cancel(alert.fingerprint, REGISTRY, now, "superseded: its heartbeat resumed first")

    def _note_registry_backlog(self) -> None:
        """One line when the deregistrations waiting for the registry's bound change in number."""
        waiting = self.queue.waiting(REGISTRY)
        if waiting == self._registry_waiting:
            return
        bound = self.setup.alerting.registry_per_minute
        if waiting:
            self._log.warning(
                "alert deregistrations: %d waiting for the registry (at most %d calls a minute, "
                "alerting.registry_per_minute)", waiting, bound,
            )  # fmt: skip
        else:
            self._log.info("alert deregistrations: none waiting for the registry any more")
        self._registry_waiting = waiting

    # -- helpers ---------------------------------------------------------------------------------

    def _delivery(
        self, alert: Alert, kind: str, url: str, body: Mapping[str, Any], who: str, now: float
    ) -> Delivery:
        agent = alert.labels.get("agent", "")
        return Delivery(kind, url, body, alert.fingerprint, alert.alertname, who, created_at=now, agent=agent)

    def _undeliverable(self, alert: Alert, who: str, kind: str, now: float, error: str) -> None:
        self.groups.add(Notice(alert, who, who, kind, 0, None, error), now)


def _describe(targets: Targets | None) -> str:
    if targets is None:
        return "nobody"
    parts = [f"schedule {targets.schedule}"] if targets.schedule else []
    if targets.users:
        parts.append("users " + ", ".join(targets.users))
    return "; ".join(parts)

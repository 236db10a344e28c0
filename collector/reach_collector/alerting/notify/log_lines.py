"""The collector's log of what alerting does: one line per firing, resolve, page sent, escalation,
acknowledgement and failed delivery (§12), INFO for what went as planned, WARNING for a failure.

Every line starts ``alert <event>:`` then the alert name, severity, agent and fingerprint, so
``grep <fingerprint>`` follows one alert from firing to its resolve (a grouped page's line lists
the fingerprints of every alert in it). URLs appear redacted. Pending and dropped-pending
transitions are DEBUG: nothing is sent for them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from reach_collector.alerting.evaluation.state import AlertState, Transition, iso
from reach_collector.alerting.notify.delivery import DeliveryAttempt
from reach_collector.text.durations import format_duration_s

__all__ = ["PAGE_KINDS", "log_ack", "log_attempt", "log_escalation", "log_transition"]

PAGE_KINDS = frozenset({"firing", "repeat", "escalation", "resolved"})  # deliveries to a person


def _who(alertname: str, severity: str, labels: Mapping[str, str], fingerprint: str) -> str:
    agent = labels.get("agent")
    return f"{alertname} {severity}" + (f" agent={agent}" if agent else "") + f" fp={fingerprint}"


def log_transition(log: logging.Logger, t: Transition) -> None:
    who = _who(t.alertname, t.severity, t.labels, t.fingerprint)
    summary = t.annotations.get("summary", "")
    if t.to_state is AlertState.FIRING:
        log.info("alert firing: %s value=%g: %s", who, t.value, summary)
    elif t.to_state is AlertState.RESOLVED:
        lasted = (
            f" after {format_duration_s(max(0.0, t.time - t.fired_at), exact=False)}"
            if t.fired_at is not None
            else ""
        )
        log.info("alert resolved: %s%s", who, lasted)
    else:
        log.debug("alert %s: %s (from %s): %s", t.to_state.value, who, t.from_state.value, summary)


def log_escalation(
    log: logging.Logger,
    alertname: str,
    severity: str,
    labels: Mapping[str, str],
    fingerprint: str,
    *,
    policy: str,
    step: int,
    steps: int,
    targets: str,
) -> None:
    """An unacknowledged alert moves to the next step of its policy (``step`` counts from 1)."""
    who = _who(alertname, severity, labels, fingerprint)
    log.info("alert escalated: %s to step %d of %d of policy %s (%s), not acknowledged", who, step, steps,
             policy, targets)  # fmt: skip


def log_ack(
    log: logging.Logger,
    alertname: str,
    severity: str,
    labels: Mapping[str, str],
    fingerprint: str,
    *,
    by: str,
    comment: str | None,
) -> None:
    said = f": {comment}" if comment else ""
    log.info("alert acknowledged: %s by %s; repeats and escalation stop%s", _who(alertname, severity, labels,
             fingerprint), by, said)  # fmt: skip


def log_attempt(log: logging.Logger, a: DeliveryAttempt) -> None:
    """One delivery attempt: a page delivered (INFO), a failure (WARNING, with what happens next),
    a superseded message (INFO); a successful Alertmanager push is DEBUG (it repeats while firing)."""
    to = f"{a.recipient}" + (f" at {a.url}" if a.url else "")  # the URL as recorded: redacted
    many = a.fingerprint.count(",") + 1
    counted = f" {many} alerts" if many > 1 else ""  # a group's message: every fingerprint listed
    head = f"{a.alertname}{counted}" + (f" agent={a.agent}" if a.agent else "") + f" fp={a.fingerprint}"
    if a.ok:
        if a.kind in PAGE_KINDS:
            log.info("alert page sent: %s (%s) to %s, attempt %d", head, a.kind, to, a.attempt)
        elif a.kind == "alertmanager":
            log.debug("alert pushed: %s to %s", head, to)
        else:
            log.info("alert %s sent: %s to %s, attempt %d", a.kind, head, to, a.attempt)
        return
    error = a.error or "failed"
    if error.startswith("superseded"):
        log.info("alert delivery dropped: %s (%s) to %s: %s", head, a.kind, to, error)
        return
    if a.next_retry_at is not None:
        then = f"; retrying at {iso(a.next_retry_at)}"
    elif a.kind == "alertmanager":
        then = "; sent again at the next evaluation"
    elif a.retryable:
        then = ""  # the error says it gave up
    elif a.url:
        then = "; not retried (the receiver refused it)"
    else:
        then = ""  # nothing to send to: no webhook, nobody on call
    log.warning("alert delivery failed: %s (%s) to %s, attempt %d: %s%s", head, a.kind, to, a.attempt, error,
                then)  # fmt: skip

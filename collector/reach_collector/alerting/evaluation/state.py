"""Alert state and Prometheus's state machine: one rule's alerts advanced by one evaluation.

inactive → pending → firing → resolved, exactly as Prometheus ``rules/alerting.go``: a new alert is
pending with ``active_at = now``; it fires on the first evaluation where ``now − active_at ≥ for``
(so ``for: 0`` fires in the evaluation that found it); a pending alert whose condition is false is
dropped silently; a firing one resolves unless ``keep_firing_for`` still holds it. Identity is the
fingerprint of the sorted label set (Alertmanager's FNV-1a), so it matches what receivers compute.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, NamedTuple

__all__ = [
    "RESOLVED_RETENTION_S",
    "Alert",
    "AlertState",
    "DuplicateLabelsError",
    "Sample",
    "Transition",
    "advance",
    "fingerprint",
    "iso",
]

# Prometheus keeps a resolved alert this long so its resolution is still sent (resolvedRetention).
RESOLVED_RETENTION_S = 15 * 60.0

_FNV_OFFSET = 14695981039346656037
_FNV_PRIME = 1099511628211
_MASK = 2**64 - 1
_SEPARATOR = 0xFF


class AlertState(str, enum.Enum):
    INACTIVE = "inactive"
    PENDING = "pending"
    FIRING = "firing"
    RESOLVED = "resolved"


class DuplicateLabelsError(ValueError):
    """Two samples of one evaluation share a label set (Prometheus rejects the evaluation too)."""


class Sample(NamedTuple):
    """One element of a rule's result vector: the condition holds for these labels now."""

    labels: Mapping[str, str]  # identifying labels besides alertname/severity (agent, service)
    value: float
    annotations: Mapping[str, str]


def fingerprint(labels: Mapping[str, str]) -> str:
    """Alertmanager's label-set fingerprint: FNV-1a 64 over sorted ``name 0xff value 0xff``."""
    h = _FNV_OFFSET
    for name in sorted(labels):
        for part in (name, labels[name]):
            for byte in part.encode():
                h = ((h ^ byte) * _FNV_PRIME) & _MASK
            h = ((h ^ _SEPARATOR) * _FNV_PRIME) & _MASK
    return f"{h:016x}"


def iso(t: float | None) -> str | None:
    """Unix seconds → UTC ISO-8601 with a ``Z`` (None stays None)."""
    if t is None:
        return None
    return datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")


@dataclass
class Alert:
    """One alert instance of one rule (mutable: the evaluator advances it in place)."""

    alertname: str
    severity: str
    labels: dict[str, str]
    fingerprint: str
    state: AlertState
    active_at: float
    value: float = 0.0
    annotations: dict[str, str] = field(default_factory=dict)
    fired_at: float | None = None
    resolved_at: float | None = None
    keep_firing_since: float | None = None
    last_evaluated: float | None = None

    def snapshot(self) -> Alert:
        return replace(self, labels=dict(self.labels), annotations=dict(self.annotations))

    def to_dict(self, acknowledged_by: str | None = None) -> dict[str, Any]:
        """The ``GET /api/alerts`` element (§9); labels and annotations in key order, as a past
        episode's come back from the history."""
        return {
            "fingerprint": self.fingerprint,
            "alertname": self.alertname,
            "severity": self.severity,
            "labels": dict(sorted(self.labels.items())),
            "annotations": dict(sorted(self.annotations.items())),
            "state": self.state.value,
            "value": self.value,
            "active_at": iso(self.active_at),
            "fired_at": iso(self.fired_at),
            "resolved_at": iso(self.resolved_at),
            "acknowledged_by": acknowledged_by,
        }


@dataclass(frozen=True)
class Transition:
    """One state change of one alert at evaluation time ``time`` (unix seconds)."""

    time: float
    alertname: str
    severity: str
    labels: Mapping[str, str]
    fingerprint: str
    from_state: AlertState
    to_state: AlertState
    value: float
    annotations: Mapping[str, str]
    active_at: float
    fired_at: float | None = None
    resolved_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``POST /api/alerts/replay`` element (§9), plus the fingerprint and value."""
        return {
            "time": iso(self.time),
            "alertname": self.alertname,
            "severity": self.severity,
            "labels": dict(self.labels),
            "from": self.from_state.value,
            "to": self.to_state.value,
            "fingerprint": self.fingerprint,
            "value": self.value,
            "annotations": dict(self.annotations),
        }


def _transition(alert: Alert, now: float, to: AlertState, frm: AlertState | None = None) -> Transition:
    return Transition(
        time=now,
        alertname=alert.alertname,
        severity=alert.severity,
        labels=dict(alert.labels),
        fingerprint=alert.fingerprint,
        from_state=alert.state if frm is None else frm,
        to_state=to,
        value=alert.value,
        annotations=dict(alert.annotations),
        active_at=alert.active_at,
        fired_at=alert.fired_at,
        resolved_at=alert.resolved_at,
    )


def advance(
    active: dict[str, Alert],
    samples: Sequence[Sample],
    now: float,
    *,
    alertname: str,
    severity: str,
    for_s: float,
    keep_firing_for_s: float = 0.0,
) -> list[Transition]:
    """Apply one successful evaluation's result vector to one rule's alerts (in place).

    ``active`` maps fingerprint → alert and holds pending, firing and recently resolved alerts.
    Raises ``DuplicateLabelsError`` (before touching anything) when two samples collide.
    """
    found: dict[str, tuple[dict[str, str], Sample]] = {}
    for sample in samples:
        labels = {k: v for k, v in sample.labels.items() if v}  # an empty label is no label
        labels["alertname"] = alertname
        labels["severity"] = severity
        fp = fingerprint(labels)
        if fp in found:
            raise DuplicateLabelsError(f"{alertname}: two results share the label set {labels}")
        found[fp] = (labels, sample)

    transitions: list[Transition] = []
    for fp, (labels, sample) in found.items():
        alert = active.get(fp)
        if alert is not None and alert.state in (AlertState.PENDING, AlertState.FIRING):
            alert.value = sample.value
            alert.annotations = dict(sample.annotations)
            continue
        # New, or a resolved one coming back: a fresh alert with a fresh active_at.
        alert = Alert(
            alertname=alertname,
            severity=severity,
            labels=labels,
            fingerprint=fp,
            state=AlertState.PENDING,
            active_at=now,
            value=sample.value,
            annotations=dict(sample.annotations),
        )
        active[fp] = alert
        transitions.append(_transition(alert, now, AlertState.PENDING, frm=AlertState.INACTIVE))

    for fp, alert in list(active.items()):
        alert.last_evaluated = now
        if fp not in found:
            if alert.state is AlertState.PENDING:
                del active[fp]
                transitions.append(_transition(alert, now, AlertState.INACTIVE))
                continue
            if alert.state is AlertState.RESOLVED:
                if alert.resolved_at is not None and now - alert.resolved_at > RESOLVED_RETENTION_S:
                    del active[fp]
                continue
            if keep_firing_for_s > 0:
                if alert.keep_firing_since is None:
                    alert.keep_firing_since = now
                if now - alert.keep_firing_since < keep_firing_for_s:
                    continue  # still firing: keep_firing_for holds it
            alert.resolved_at = now
            transitions.append(_transition(alert, now, AlertState.RESOLVED))
            alert.state = AlertState.RESOLVED
            alert.keep_firing_since = None
            continue
        alert.keep_firing_since = None
        if alert.state is AlertState.PENDING and now - alert.active_at >= for_s:
            alert.fired_at = now
            transitions.append(_transition(alert, now, AlertState.FIRING))
            alert.state = AlertState.FIRING
    return transitions

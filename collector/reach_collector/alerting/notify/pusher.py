"""Optional push into a real Alertmanager: ``POST {alertmanager_url}/api/v2/alerts``, as Prometheus
does — firing alerts re-sent every ``resend_delay`` with ``endsAt`` a few intervals ahead (so they
expire if we stop), resolved ones sent with their resolution time while retained. No retry queue:
the next resend is the retry, exactly like Prometheus's notifier.
"""

from __future__ import annotations

from collections.abc import Sequence

from reach_collector.alerting.evaluation.state import Alert, AlertState
from reach_collector.alerting.notify.delivery import DeliveryAttempt, Record
from reach_collector.alerting.notify.links import AlertLinks
from reach_collector.alerting.notify.webhook import Sender, v2_alert, with_path
from reach_collector.text.redact_url import redact_url, scrub

__all__ = ["AlertmanagerPusher"]


class AlertmanagerPusher:
    def __init__(
        self,
        alertmanager_url: str,
        sender: Sender,
        *,
        interval_s: float,
        resend_delay_s: float = 60.0,
        external_url: str = "http://127.0.0.1:4318",
        links: AlertLinks | None = None,
        record: Record | None = None,
    ) -> None:
        self.url = with_path(alertmanager_url, "api/v2/alerts")
        self._sender = sender
        self._resend = resend_delay_s
        self._valid_for = 4 * max(resend_delay_s, interval_s)  # Prometheus: 4 × max(resend, interval)
        self._links = links or AlertLinks(external_url)
        self._record = record or (lambda attempt: None)
        self._sent: dict[tuple[str, AlertState, float | None], float] = {}
        self._attempts = 0

    def push(self, now: float, alerts: Sequence[Alert]) -> DeliveryAttempt | None:
        """Send the alerts that are due; returns the attempt, or None when nothing was due."""
        due = []
        for alert in alerts:
            if alert.state not in (AlertState.FIRING, AlertState.RESOLVED):
                continue
            key = (alert.fingerprint, alert.state, alert.fired_at)
            last = self._sent.get(key)
            if last is None or now - last >= self._resend:
                due.append((key, alert))
        if not due:
            return None
        body = [
            v2_alert(
                a,
                now=now,
                valid_for_s=self._valid_for,
                generator=self._links.generator(a),
                links=self._links.annotations(a),
            )
            for _, a in due
        ]
        retryable, error = self._sender(self.url, body)
        if error is None:
            for key, _ in due:
                self._sent[key] = now
        live = {(a.fingerprint, a.state, a.fired_at) for a in alerts}
        self._sent = {k: v for k, v in self._sent.items() if k in live}
        self._attempts += 1
        attempt = DeliveryAttempt(
            time=now,
            delivery_id=self._attempts,
            kind="alertmanager",
            fingerprint=",".join(a.fingerprint for _, a in due),
            alertname=",".join(sorted({a.alertname for _, a in due})),
            recipient="alertmanager",
            url=redact_url(self.url),
            attempt=1,
            ok=error is None,
            retryable=retryable,
            error=scrub(error, self.url) if error else None,
        )
        self._record(attempt)
        return attempt

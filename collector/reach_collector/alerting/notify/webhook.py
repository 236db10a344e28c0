"""Wire formats and the HTTP sender: Alertmanager webhook v4 bodies, Alertmanager API v2 alerts,
and ``HttpSender`` which returns ``(retryable, error)`` like Alertmanager's notifiers.

Retryable: 5xx answers, timeouts, connection errors. Never retried: 4xx (and any other non-2xx),
malformed URLs — the receiver will not change its mind. An error never quotes the URL's secrets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol
from urllib.parse import urlsplit, urlunsplit

from reach_collector.alerting.evaluation.state import Alert, AlertState, iso
from reach_collector.text.redact_url import redact_url, scrub

if TYPE_CHECKING:
    import httpx

__all__ = [
    "ZERO_TIME",
    "HttpSender",
    "PagedAlert",
    "SendOutcome",
    "Sender",
    "v2_alert",
    "webhook_payload",
    "with_path",
]

ZERO_TIME = "0001-01-01T00:00:00Z"  # Alertmanager's endsAt of an alert that has not ended


class SendOutcome(NamedTuple):
    """``(retryable, error)``; ``error is None`` means delivered."""

    retryable: bool
    error: str | None


class Sender(Protocol):
    """POST ``body`` (any JSON value) to ``url``; never raises."""

    def __call__(self, url: str, body: Any) -> SendOutcome: ...


class HttpSender:
    """POSTs JSON with httpx; one shared client (connection reuse), bounded by ``timeout_s``.

    httpx is imported here, not at module level, so the rest of alerting works without it.
    """

    def __init__(self, timeout_s: float = 5.0, client: httpx.Client | None = None) -> None:
        import httpx

        self._client = client or httpx.Client(
            timeout=timeout_s, headers={"user-agent": "reach-otel-alerting"}
        )
        self._owns = client is None

    def __call__(self, url: str, body: Any) -> SendOutcome:
        import httpx

        try:
            response = self._client.post(url, json=body)
        except (httpx.InvalidURL, httpx.UnsupportedProtocol, ValueError) as exc:
            return SendOutcome(False, f"bad URL {redact_url(url)!r}: {scrub(str(exc), url)}")
        except httpx.TimeoutException as exc:
            return SendOutcome(True, f"timeout: {type(exc).__name__}")
        except httpx.TransportError as exc:  # refused, reset, DNS: the receiver may come back
            return SendOutcome(True, f"connection error: {type(exc).__name__}: {scrub(str(exc), url)}")
        if response.is_success:
            return SendOutcome(False, None)
        # A receiver's error page may quote the request back, token and all.
        detail = f"HTTP {response.status_code}: {scrub(response.text[:200], url)}"
        return SendOutcome(response.status_code >= 500, detail)

    def close(self) -> None:
        if self._owns:
            self._client.close()


def _status(alert: Alert) -> str:
    return "resolved" if alert.state is AlertState.RESOLVED else "firing"


def _annotations(alert: Alert, links: Mapping[str, str] | None) -> dict[str, str]:
    return {**alert.annotations, **(links or {})}


def _v4_alert(alert: Alert, generator: str, links: Mapping[str, str] | None) -> dict[str, Any]:
    return {
        "status": _status(alert),
        "labels": dict(alert.labels),
        "annotations": _annotations(alert, links),
        "startsAt": iso(alert.fired_at if alert.fired_at is not None else alert.active_at),
        "endsAt": iso(alert.resolved_at) if alert.state is AlertState.RESOLVED else ZERO_TIME,
        "generatorURL": generator,
        "fingerprint": alert.fingerprint,
    }


class PagedAlert(NamedTuple):
    """One alert of a message, with where its data is (``generator``) and its links."""

    alert: Alert
    generator: str
    links: Mapping[str, str] | None = None


def _common(maps: Sequence[Mapping[str, str]]) -> dict[str, str]:
    first, *rest = maps
    return {k: v for k, v in first.items() if all(m.get(k) == v for m in rest)}


def webhook_payload(
    alerts: Sequence[PagedAlert],
    *,
    receiver: str,
    external_url: str,
    group_key: str,
    group_labels: Mapping[str, str],
    recipient: Mapping[str, Any],
) -> dict[str, Any]:
    """Alertmanager webhook JSON version 4 for one group's message + recipient: every alert named
    in ``alerts`` (none truncated), its links (traces, ack URL) added to its annotations; the
    message is firing while any of its alerts is."""
    if not alerts:
        raise ValueError("a webhook message names at least one alert")
    firing = any(p.alert.state is not AlertState.RESOLVED for p in alerts)
    return {
        "version": "4",
        "groupKey": group_key,
        "truncatedAlerts": 0,
        "status": "firing" if firing else "resolved",
        "receiver": receiver,
        "groupLabels": dict(group_labels),
        "commonLabels": _common([p.alert.labels for p in alerts]),
        "commonAnnotations": _common([_annotations(p.alert, p.links) for p in alerts]),
        "externalURL": external_url,
        "alerts": [_v4_alert(p.alert, p.generator, p.links) for p in alerts],
        "recipient": dict(recipient),
    }


def with_path(url: str, path: str) -> str:
    """``url`` with ``path`` joined onto its path; its query stays a query
    (``http://reg/api?key=1`` + ``deregister`` → ``http://reg/api/deregister?key=1``)."""
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. a bad IPv6 literal: the sender reports it, the URL stays as given
        return url.rstrip("/") + "/" + path.lstrip("/")
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/" + path.lstrip("/")))


def v2_alert(
    alert: Alert,
    *,
    now: float,
    valid_for_s: float,
    generator: str,
    links: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One element of Alertmanager's ``POST /api/v2/alerts`` body, as Prometheus sends it:
    a firing alert ends ``valid_for_s`` from now unless re-sent; a resolved one at its resolution."""
    ends = alert.resolved_at if alert.state is AlertState.RESOLVED else now + valid_for_s
    return {
        "labels": dict(alert.labels),
        "annotations": _annotations(alert, links),
        "startsAt": iso(alert.fired_at if alert.fired_at is not None else alert.active_at),
        "endsAt": iso(ends),
        "generatorURL": generator,
    }

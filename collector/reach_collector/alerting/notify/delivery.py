"""Delivery with retry and a record of every attempt: the retry → record end of the pipeline.

Nothing sleeps: a failed retryable delivery is due again at ``now + backoff`` and the engine's next
``flush(now)`` (driven by the injected clock) tries it, so a receiver answering 500 gets the
notification once it recovers. 4xx and other non-retryable answers are recorded once and dropped.
A destination may be rate-bounded (``per_minute``: the registry): its calls past the bound wait,
in order, for the minute to free a slot. Records show a URL redacted; the real one is only sent to.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from reach_collector.alerting.notify.webhook import Sender
from reach_collector.text.redact_url import redact_url, scrub

__all__ = ["Backoff", "Delivery", "DeliveryAttempt", "RetryQueue"]

_MINUTE: Final = 60.0


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff: ``initial_s × factor^(attempt−1)`` capped at ``max_s``; at most
    ``max_attempts`` tries in all."""

    initial_s: float = 1.0
    factor: float = 2.0
    max_s: float = 60.0
    max_attempts: int = 8

    def delay(self, attempt: int) -> float:
        return min(self.max_s, self.initial_s * self.factor ** max(0, attempt - 1))


@dataclass
class Delivery:
    """One message to one destination (a person's webhook, the registry's deregister hook) about
    one alert or a group of them (``fingerprint`` and ``alertname`` then list them, comma-separated).
    """

    kind: str  # firing | repeat | escalation | resolved | deregister
    url: str
    body: Mapping[str, Any]
    fingerprint: str
    alertname: str
    recipient: str
    created_at: float
    next_at: float = 0.0
    attempts: int = 0
    id: int = 0
    agent: str = ""  # the alerts' agent label when they share one, for the log line

    @property
    def fingerprints(self) -> frozenset[str]:
        return frozenset(self.fingerprint.split(","))


@dataclass(frozen=True)
class DeliveryAttempt:
    """The record of one attempt (or of a delivery that could not be attempted at all); ``url``
    is shown redacted and ``error`` carries none of its secrets."""

    time: float
    delivery_id: int
    kind: str
    fingerprint: str
    alertname: str
    recipient: str
    url: str | None
    attempt: int
    ok: bool
    retryable: bool = False
    error: str | None = None
    next_retry_at: float | None = None
    agent: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


Record = Callable[[DeliveryAttempt], None]


class RetryQueue:
    """Pending deliveries; ``flush(now)`` tries each due one once and records the outcome.
    ``per_minute`` bounds the calls (first attempts and retries) to a recipient in any minute."""

    def __init__(
        self,
        sender: Sender,
        record: Record,
        backoff: Backoff | None = None,
        per_minute: Mapping[str, int] | None = None,
    ) -> None:
        self._sender = sender
        self._record = record
        self.backoff = backoff or Backoff()
        self._pending: list[Delivery] = []
        self._ids = itertools.count(1)
        self._limits = dict(per_minute or {})
        self._calls: dict[str, deque[float]] = {r: deque() for r in self._limits}

    def submit(self, delivery: Delivery, now: float) -> None:
        """Queue for sending at the next flush; an older queued message to the same destination
        about the same alerts (or fewer of them) is superseded: its receiver would only get
        outdated news."""
        delivery.id = next(self._ids)
        delivery.next_at = now
        kept = []
        for old in self._pending:
            same = (old.recipient, old.url) == (delivery.recipient, delivery.url)
            if same and old.fingerprints <= delivery.fingerprints:
                self._note(old, now, ok=False, error=f"superseded by a {delivery.kind} notification")
            else:
                kept.append(old)
        self._pending = [*kept, delivery]

    def cancel(self, fingerprint: str, recipient: str, now: float, why: str) -> bool:
        """Drop a queued delivery about this alert to this recipient (recorded with ``why``)."""
        found = [d for d in self._pending if (d.fingerprint, d.recipient) == (fingerprint, recipient)]
        for d in found:
            self._pending.remove(d)
            self._note(d, now, ok=False, error=why)
        return bool(found)

    def waiting(self, recipient: str) -> int:
        """Deliveries to ``recipient`` not attempted yet (held by its bound, or not yet due)."""
        return sum(1 for d in self._pending if d.recipient == recipient and d.attempts == 0)

    def undeliverable(self, delivery: Delivery, now: float, error: str) -> None:
        """Record a delivery that has no destination (e.g. a user without a webhook)."""
        delivery.id = next(self._ids)
        self._note(delivery, now, ok=False, error=error, url=None)

    def flush(self, now: float) -> list[DeliveryAttempt]:
        due = [d for d in self._pending if d.next_at <= now]
        self._pending = [d for d in self._pending if d.next_at > now]
        attempts = []
        for delivery in due:
            if not self._slot(delivery, now):
                self._pending.append(delivery)  # in order: it goes first when a slot frees
                continue
            delivery.attempts += 1
            retryable, error = self._sender(delivery.url, delivery.body)
            retry_at = None
            if error is not None and retryable and delivery.attempts < self.backoff.max_attempts:
                retry_at = now + self.backoff.delay(delivery.attempts)
                delivery.next_at = retry_at
                self._pending.append(delivery)
            elif error is not None and retryable:
                error = f"{error} (gave up after {delivery.attempts} attempts)"
            attempts.append(
                self._note(
                    delivery, now, ok=error is None, retryable=retryable, error=error, retry_at=retry_at
                )
            )
        return attempts

    def _slot(self, delivery: Delivery, now: float) -> bool:
        """Whether the recipient's bound lets this call go now; if not, when it may (next_at)."""
        limit = self._limits.get(delivery.recipient)
        if limit is None:
            return True
        calls = self._calls[delivery.recipient]
        while calls and calls[0] <= now - _MINUTE:
            calls.popleft()
        if len(calls) >= limit:
            delivery.next_at = calls[0] + _MINUTE
            return False
        calls.append(now)
        return True

    def next_due(self) -> float | None:
        return min((d.next_at for d in self._pending), default=None)

    @property
    def pending(self) -> list[Delivery]:
        return list(self._pending)

    def _note(
        self,
        d: Delivery,
        now: float,
        *,
        ok: bool,
        error: str | None,
        retryable: bool = False,
        retry_at: float | None = None,
        url: str | None = "",
    ) -> DeliveryAttempt:
        shown = d.url if url == "" else url
        attempt = DeliveryAttempt(
            time=now,
            delivery_id=d.id,
            kind=d.kind,
            fingerprint=d.fingerprint,
            alertname=d.alertname,
            recipient=d.recipient,
            url=redact_url(shown) if shown else shown,
            attempt=d.attempts,
            ok=ok,
            retryable=retryable,
            error=scrub(error, d.url) if error and d.url else error,
            next_retry_at=retry_at,
            agent=d.agent,
        )
        self._record(attempt)
        return attempt

"""Where alert history goes: a store-agnostic sink Protocol and an in-memory implementation.

The live engine records every transition, delivery attempt and acknowledgement here; replay never
does (§11). The DuckDB-backed sink implements the same three methods.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from reach_collector.alerting.evaluation.state import Transition
from reach_collector.alerting.notify.delivery import DeliveryAttempt

__all__ = ["Acknowledgement", "AlertHistory", "MemoryHistory"]


@dataclass(frozen=True)
class Acknowledgement:
    fingerprint: str
    by: str
    time: float
    fired_at: float | None  # which firing episode was acknowledged


class AlertHistory(Protocol):
    def record_transition(self, transition: Transition) -> None: ...

    def record_delivery(self, attempt: DeliveryAttempt) -> None: ...

    def record_ack(self, ack: Acknowledgement) -> None: ...


@dataclass
class MemoryHistory:
    """Keeps everything in lists (tests, and a collector run without persistence)."""

    transitions: list[Transition] = field(default_factory=list)
    deliveries: list[DeliveryAttempt] = field(default_factory=list)
    acks: list[Acknowledgement] = field(default_factory=list)

    def record_transition(self, transition: Transition) -> None:
        self.transitions.append(transition)

    def record_delivery(self, attempt: DeliveryAttempt) -> None:
        self.deliveries.append(attempt)

    def record_ack(self, ack: Acknowledgement) -> None:
        self.acks.append(ack)

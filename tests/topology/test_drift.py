"""Topology drift (SPEC §15): a handoff edge, or a cycle, the previous baseline never saw is an
event ``ReachTopologyChanged`` naming the edge and the service.version that introduced it; no page
by default. Known history over OTLP/HTTP from two releases of one service, a live engine on a fake
clock, and replay."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from topology_helpers import App, Collector

from reach_collector.alerting.evaluation.state import iso
from reach_collector.alerting.rules.drift import cycle_through
from reach_collector.config import from_mapping

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "alerting"))
from alerting_fakes import Receiver

T0 = 1_700_000_000 - 1_700_000_000 % 3600
H = 3600


def _traffic(collector: Collector, apps: Callable[..., App]) -> None:
    """Release 1.0 for three hours: Triage → Billing → Ledger. At T0 + 3h 10m release 1.1 adds
    Ledger → Triage (closing a cycle) and Triage → Refund."""
    old = apps(collector.url, version="1.0", base_ns=T0 * 1_000_000_000)
    for m in range(0, 5 * 60, 10):
        ctx = old.trace(m * 60_000)
        old.handoff(ctx, "Triage", "Billing", m * 60_000, 100, "committed")
        old.handoff(ctx, "Billing", "Ledger", m * 60_000 + 200, 100, "committed")
    old.flush()
    new = apps(collector.url, version="1.1", base_ns=T0 * 1_000_000_000)
    for m in range(190, 5 * 60, 10):
        ctx = new.trace(m * 60_000)
        new.handoff(ctx, "Triage", "Billing", m * 60_000 + 1000, 100, "committed")
        new.handoff(ctx, "Ledger", "Triage", m * 60_000 + 2000, 100, "committed")
        new.handoff(ctx, "Triage", "Refund", m * 60_000 + 3000, 100, "committed")
    new.flush()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as rx:
        yield rx


@pytest.fixture
def drift_collector(
    start_collector: Callable[..., Collector], apps: Callable[..., App], receiver: Receiver
) -> Collector:
    off = {"enabled": False}
    doc: dict[str, Any] = {
        "alerting": {
            "interval": "5m",
            "rules": {
                "ReachSuccessRateLow": off,
                "ReachP99LatencyHigh": off,
                "ReachAgentHeartbeatLost": off,
                "ReachTopologyChanged": {"type": "topology_drift", "baseline": "1d", "window": "1h"},
            },
        },
        "users": {"alice": {"webhook": f"{receiver.url}/alice"}},
        "routing": {"P0": {"notify": {"users": ["alice"]}}, "P1": {"notify": {"users": ["alice"]}}},
    }
    collector = start_collector(from_mapping(doc), clock=lambda: T0 + 5.0 * H, alert_loop=False)
    _traffic(collector, apps)
    return collector


# New edges first used (their first handoff span ends) at T0 + 3h 10m 2.1s and 3.1s: seen by the
# evaluation at 3h 15m, resolved at 4h 15m (then that first use is in the baseline, not the window).
EXPECTED = [
    (195, ("Ledger", "Triage"), "firing"),
    (195, ("Triage", "Refund"), "firing"),
    (255, ("Ledger", "Triage"), "resolved"),
    (255, ("Triage", "Refund"), "resolved"),
]


def test_a_new_edge_names_the_release_that_introduced_it(
    drift_collector: Collector, receiver: Receiver
) -> None:
    engine = drift_collector.app.state.alerts
    seen, firing = [], {}
    for m in range(120, 5 * 60, 5):
        for t in engine.tick(T0 + 60.0 * m):
            assert t.alertname == "ReachTopologyChanged" and t.severity == "info"
            if t.to_state.value != "pending":
                seen.append((m, (t.labels["source"], t.labels["target"]), t.to_state.value))
            if t.to_state.value == "firing":
                firing[(t.labels["source"], t.labels["target"])] = dict(t.annotations)
    assert seen == EXPECTED
    cycle, edge = firing[("Ledger", "Triage")], firing[("Triage", "Refund")]
    assert cycle["service_version"] == edge["service_version"] == "1.1"
    assert cycle["change"] == "cycle" and cycle["cycle"] == "Ledger → Triage → Billing → Ledger"
    assert edge["change"] == "edge" and "cycle" not in edge
    assert edge["first_seen"] == iso(T0 + 3 * H + 600 + 3.1)  # the end of its first handoff span
    assert (
        edge["summary"].startswith("Triage → Refund: new edge, first seen") and "from 1.1" in edge["summary"]
    )
    assert receiver.received == []  # an event: nobody is paged by default


def test_replay_shows_the_same_events(drift_collector: Collector) -> None:
    body = {"since": iso(T0 + 2 * H), "until": iso(T0 + 5 * H - 300), "step": "5m"}
    replayed = httpx.post(drift_collector.url + "/api/alerts/replay", json=body, timeout=60).json()
    got = [
        (t["labels"]["source"], t["labels"]["target"], t["to"])
        for t in replayed["transitions"]
        if t["to"] != "pending"
    ]
    assert got == [(s, t, to) for _m, (s, t), to in EXPECTED]


def test_cycles_through_an_edge() -> None:
    graph = {"A": {"B"}, "B": {"C"}, "C": {"A", "D"}}
    assert cycle_through(("C", "A"), graph) == ["C", "A", "B", "C"]
    assert cycle_through(("C", "D"), graph) is None
    assert cycle_through(("X", "X"), graph) == ["X", "X"]

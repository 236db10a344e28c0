"""Edge SLOs (SPEC §15): ``type: edge_slo`` on the commit rate of each source → target edge, with
the burn-rate rule's multi-window test. Known handoff history sent over OTLP/HTTP; replay gives the
exact firing and resolving times; the same on a live engine driven by a fake clock, where the page
for an edge reaches the **owner of its target** (a schedule's on-call webhook on loopback) and an
edge whose target has no owner goes to the P1 route."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from topology_helpers import App, Collector

from reach_collector.alerting.evaluation.state import iso
from reach_collector.config import from_mapping

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "alerting"))
from alerting_fakes import Receiver

T0 = 1_700_000_000 - 1_700_000_000 % 3600  # an hour boundary in the past: minute m is T0 + 60 m
MINUTES = 30
# edge → the minutes in which half of its ten handoffs a minute fail
FAILING = {("Triage", "Billing"): range(10, 20), ("Triage", "Tech"): range(15, 25)}


def _history(app: App) -> None:
    """Ten handoffs a minute on each edge, minute m's ending at T0 + 60 m + 6 j + 1 s (j = 0…9)."""
    for m in range(MINUTES):
        ctx = app.trace(m * 60_000)
        for (source, target), bad in FAILING.items():
            for j in range(10):
                status = "failed" if m in bad and j % 2 else "committed"
                app.handoff(ctx, source, target, m * 60_000 + j * 6000, 1000, status)
        app.flush()


def _config(receiver: str, **extra: Any) -> dict[str, Any]:
    off = {"enabled": False}
    return {
        "alerting": {
            "interval": "1m",
            "rules": {
                "ReachSuccessRateLow": off,
                "ReachP99LatencyHigh": off,
                "ReachAgentHeartbeatLost": off,
                "EdgeCommitSLO": {
                    "type": "edge_slo",
                    "objective": 0.99,
                    "windows": [{"long": "10m", "short": "1m", "factor": 14.4}],
                },
            },
        },
        "users": {"alice": {"webhook": f"{receiver}/alice"}, "carol": {"webhook": f"{receiver}/carol"}},
        "schedules": {
            "billing": {
                "layers": [
                    {"name": "all", "start": "2020-01-06T00:00:00", "length": "1w", "members": ["carol"]}
                ]
            }
        },
        "routing": {"P1": {"notify": {"users": ["alice"]}}},
        "owners": {"Billing": {"schedule": "billing"}},
        **extra,
    }


# Billing's edge: 10-minute burn = 5 × failing minutes > 14.4 from the third (T0 + 13m); the 1-minute
# window clears the minute after the last failure (T0 + 21m). Tech's: five minutes later.
EXPECTED = [
    (13, ("Triage", "Billing"), "inactive", "pending"),
    (13, ("Triage", "Billing"), "pending", "firing"),
    (18, ("Triage", "Tech"), "inactive", "pending"),
    (18, ("Triage", "Tech"), "pending", "firing"),
    (21, ("Triage", "Billing"), "firing", "resolved"),
    (26, ("Triage", "Tech"), "firing", "resolved"),
]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as rx:
        yield rx


@pytest.fixture
def slo_collector(
    start_collector: Callable[..., Collector], apps: Callable[..., App], receiver: Receiver
) -> Collector:
    settings = from_mapping(_config(receiver.url))
    collector = start_collector(settings, clock=lambda: T0 + MINUTES * 60.0, alert_loop=False)
    _history(apps(collector.url, base_ns=T0 * 1_000_000_000))
    return collector


def _edge_transitions(transitions: list[dict[str, Any]]) -> list[tuple[int, tuple[str, str], str, str]]:
    out = []
    for t in transitions:
        if t["alertname"] == "EdgeCommitSLO":
            assert t["labels"]["agent"] == t["labels"]["target"] and t["severity"] == "P1"
            minute = (_unix(t["time"]) - T0) / 60
            out.append((int(minute), (t["labels"]["source"], t["labels"]["target"]), t["from"], t["to"]))
    return out


def _unix(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def test_replay_gives_the_firing_times(slo_collector: Collector, receiver: Receiver) -> None:
    import httpx

    body = {"since": iso(T0), "until": iso(T0 + MINUTES * 60), "step": "1m"}
    response = httpx.post(slo_collector.url + "/api/alerts/replay", json=body, timeout=60)
    assert response.status_code == 200, response.text
    replayed = response.json()
    assert replayed["errors"] == []
    assert _edge_transitions(replayed["transitions"]) == EXPECTED
    firing = next(t for t in replayed["transitions"] if t["to"] == "firing")
    assert firing["annotations"]["windows"] == "10m/1m"
    assert firing["annotations"]["summary"].startswith(
        "Triage → Billing: commit-rate error budget burning 15.0×"
    )
    assert receiver.received == []  # replay notifies no one


def test_live_pages_the_owner_of_the_target_and_falls_back_to_p1(
    slo_collector: Collector, receiver: Receiver
) -> None:
    engine = slo_collector.app.state.alerts
    seen = []
    live_keys = []  # the labels of firing alerts as /api/alerts lists them
    for m in range(MINUTES + 1):
        for t in engine.tick(T0 + 60.0 * m):
            if t.alertname == "EdgeCommitSLO":
                seen.append(
                    (m, (t.labels["source"], t.labels["target"]), t.from_state.value, t.to_state.value)
                )
        live_keys += [
            list(a["labels"]) for a in slo_collector.get("/api/alerts?state=firing").json()["alerts"]
        ]
    assert seen == EXPECTED
    pages = [(path, b["status"], b["alerts"][0]["labels"]["target"]) for path, b in receiver.received]
    # Billing has an owner (the billing schedule: carol); Tech has none, so the P1 route (alice).
    assert pages == [
        ("/carol", "firing", "Billing"),
        ("/alice", "firing", "Tech"),
        ("/carol", "resolved", "Billing"),
        ("/alice", "resolved", "Tech"),
    ]
    page = receiver.bodies("/carol")[0]
    assert page["alerts"][0]["labels"] == {
        "alertname": "EdgeCommitSLO",
        "severity": "P1",
        "source": "Triage",
        "target": "Billing",
        "agent": "Billing",
    }
    assert "/api/topology?window=10m" in page["alerts"][0]["generatorURL"]
    # /api/alerts shows both resolved episodes.
    past = slo_collector.get("/api/alerts").json()["alerts"]
    states = {(a["labels"]["target"], a["state"]) for a in past}
    assert states == {("Billing", "resolved"), ("Tech", "resolved")}
    # Labels in one order, live or past (the console lists them as given).
    keys = ["agent", "alertname", "severity", "source", "target"]
    assert live_keys and all(k == keys for k in live_keys) and all(list(a["labels"]) == keys for a in past)


def test_an_owner_may_be_users_or_an_escalation_policy(
    start_collector: Callable[..., Collector], receiver: Receiver
) -> None:
    from reach_collector.config import ConfigError

    doc = _config(receiver.url)
    doc["owners"] = {"Billing": {"users": ["carol"]}, "Tech": {"escalation_policy": "tech"}}
    doc["escalation_policies"] = {"tech": {"steps": [{"notify": {"users": ["alice"]}}]}}
    setup = start_collector(from_mapping(doc), alert_loop=False).app.state.alerts.setup
    assert (
        setup.owners["Billing"].notify.users == ("carol",)
        and setup.owners["Tech"].escalation_policy == "tech"
    )
    for owners, needle in [
        ({"Billing": {"schedule": "nope"}}, "owners.Billing.schedule: no schedule named 'nope'"),
        ({"Billing": {"escalation_policy": "nope"}}, "owners.Billing.escalation_policy: no policy"),
        ({"Billing": {"pager": "x"}}, "owners.Billing.pager: unknown key"),
    ]:
        with pytest.raises(ConfigError, match=needle):
            start_collector(from_mapping({**doc, "owners": owners}), alert_loop=False)
    with pytest.raises(ConfigError, match=r"EdgeCommitSLO\.objective"):
        bad = _config(receiver.url)
        bad["alerting"]["rules"]["EdgeCommitSLO"]["objective"] = 2
        start_collector(from_mapping(bad), alert_loop=False)

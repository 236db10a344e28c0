"""The notification pipeline end to end on a fake clock: Alertmanager v4 bodies to real local
HTTP receivers, retry on 5xx/timeouts (never 4xx), every attempt recorded, P0 repeat until ack,
escalation without ack, P1 inhibited by P0, P2's deregistration hook paging nobody."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

import pytest
from alerting_fakes import MIN, T0, FakeClock, Receiver, RecordingSender, free_port

from reach_collector.alerting.config import load_alerting
from reach_collector.alerting.evaluation.engine import AlertEngine
from reach_collector.alerting.evaluation.history import MemoryHistory
from reach_collector.alerting.inputs.data import AgentWindowStats, Heartbeat
from reach_collector.alerting.notify.delivery import Backoff
from reach_collector.alerting.notify.webhook import HttpSender, SendOutcome


class World:
    """Scripted agents: who fails, who is slow, last heartbeats."""

    def __init__(self) -> None:
        self.failing: set[str] = set()
        self.slow: set[str] = set()
        self.beats: dict[str, float] = {}

    def agent_stats(self, now: float, window_s: float) -> Mapping[str, AgentWindowStats]:
        return {
            agent: AgentWindowStats(
                10,
                8 if agent in self.failing else 0,
                30000.0 if agent in self.slow else 100.0,
                f"{agent}-svc",
            )
            for agent in ("billing", "triage")
        }

    def heartbeats(self, now: float) -> Mapping[str, Heartbeat]:
        return {agent: Heartbeat(t, "mesh") for agent, t in self.beats.items()}


def config(base: str, **alerting: Any) -> dict[str, Any]:
    return {
        "alerting": {
            "rules": {"ReachSuccessRateLow": {"for": "0s"}, "ReachP99LatencyHigh": {"for": "0s"}},
            **alerting,
        },
        "users": {name: {"webhook": f"{base}/{name}"} for name in ("alice", "bob", "mgr")},
        "schedules": {
            "primary": {
                "layers": [{"start": "2026-01-05T00:00:00", "length": "1w", "members": ["alice", "bob"]}]
            }
        },
        "escalation_policies": {
            "p0": {
                "steps": [
                    {"notify": {"schedule": "primary"}, "escalate_after": "5m"},
                    {"notify": {"users": ["mgr"]}},
                ]
            }
        },
        "routing": {"P0": {"escalation_policy": "p0"}, "P1": {"notify": {"users": ["bob"]}}},
    }


def engine(
    doc: dict[str, Any], world: World, clock: FakeClock, sender: Any = None, **kw: Any
) -> tuple[AlertEngine, MemoryHistory]:
    history = MemoryHistory()
    eng = AlertEngine(
        load_alerting(doc),
        world,
        sender=sender or HttpSender(timeout_s=2.0),
        history=history,
        clock=clock,
        external_url="http://collector.test:4318",
        **kw,
    )
    return eng, history


def at(clock: FakeClock, eng: AlertEngine, minutes: float) -> None:
    clock.t = T0 + minutes * MIN
    eng.tick()


def test_p0_reaches_the_on_call_user_with_an_alertmanager_v4_body() -> None:
    world, clock = World(), FakeClock()
    with Receiver() as rx:
        eng, history = engine(config(rx.url), world, clock)
        world.failing.add("billing")
        at(clock, eng, 0)
        (body,) = rx.bodies("/alice")  # alice is on call in week 0
        assert rx.bodies("/bob") == [] and rx.bodies("/mgr") == []
    assert body["version"] == "4"
    assert body["status"] == "firing"
    assert body["receiver"] == "alice"
    assert body["truncatedAlerts"] == 0
    assert body["externalURL"] == "http://collector.test:4318"
    labels = {
        "alertname": "ReachSuccessRateLow",
        "severity": "P0",
        "agent": "billing",
        "service": "billing-svc",
    }
    # Grouped by alertname (the default group_by): the group's labels, and all of the one alert's.
    assert body["groupLabels"] == {"alertname": "ReachSuccessRateLow"} and body["commonLabels"] == labels
    assert body["commonAnnotations"]["summary"].startswith("billing: success rate 20.0%")
    assert body["groupKey"] == '{}/{severity="P0"}:{alertname="ReachSuccessRateLow"}'
    (alert,) = body["alerts"]
    assert set(alert) == {
        "status",
        "labels",
        "annotations",
        "startsAt",
        "endsAt",
        "generatorURL",
        "fingerprint",
    }
    assert alert["status"] == "firing" and alert["labels"] == labels
    assert alert["startsAt"] == "2026-01-05T08:00:00Z" and alert["endsAt"] == "0001-01-01T00:00:00Z"
    assert alert["generatorURL"].startswith("http://collector.test:4318/api/metrics/golden")
    assert len(alert["fingerprint"]) == 16
    assert body["recipient"] == {
        "user": "alice",
        "via": "schedule:primary",
        "reason": "firing",
        "step": 0,
        "severity": "P0",
    }
    (attempt,) = history.deliveries
    assert attempt.ok and attempt.recipient == "alice" and attempt.attempt == 1 and attempt.kind == "firing"


def test_one_message_on_firing_one_on_resolve() -> None:
    world, clock = World(), FakeClock()
    with Receiver() as rx:
        eng, _ = engine(config(rx.url), world, clock)
        world.slow.add("triage")
        for m in range(0, 4):
            at(clock, eng, m)
        world.slow.clear()
        for m in range(4, 8):
            at(clock, eng, m)
        bodies = rx.bodies("/bob")
    assert [b["status"] for b in bodies] == ["firing", "resolved"]
    resolved = bodies[1]["alerts"][0]
    assert resolved["endsAt"] == "2026-01-05T08:04:00Z"
    assert resolved["fingerprint"] == bodies[0]["alerts"][0]["fingerprint"]
    assert bodies[1]["recipient"]["reason"] == "resolved"


def test_receiver_answering_500_gets_it_once_it_recovers() -> None:
    world, clock = World(), FakeClock()
    with Receiver(statuses=[500, 502]) as rx:
        eng, history = engine(config(rx.url), world, clock)
        world.failing.add("billing")
        at(clock, eng, 0)
        assert eng.pipeline.queue.next_due() == T0 + 1.0  # first backoff: 1 s
        assert eng.next_wakeup() == T0 + 1.0
        clock.advance(1.0)
        eng.flush()
        assert eng.pipeline.queue.next_due() == T0 + 3.0  # then 2 s
        clock.advance(2.0)
        eng.flush()
        assert rx.answered == [500, 502, 200]
        assert eng.pipeline.queue.next_due() is None
        assert len(rx.bodies("/alice")) == 3  # the same message each time
    attempts = [(a.attempt, a.ok, a.retryable) for a in history.deliveries]
    assert attempts == [(1, False, True), (2, False, True), (3, True, False)]
    assert "HTTP 500" in (history.deliveries[0].error or "")


def test_4xx_is_never_retried() -> None:
    world, clock = World(), FakeClock()
    with Receiver(statuses=[400]) as rx:
        eng, history = engine(config(rx.url), world, clock)
        world.failing.add("billing")
        at(clock, eng, 0)
        for _ in range(5):
            clock.advance(60)
            eng.flush()
        assert rx.answered == [400]
    (attempt,) = history.deliveries
    assert not attempt.ok and not attempt.retryable and attempt.error and "HTTP 400" in attempt.error
    assert eng.pipeline.queue.next_due() is None


def test_timeouts_and_refused_connections_are_retried() -> None:
    sender = HttpSender(timeout_s=0.2)
    with Receiver(delay_s=1.0) as slow:
        retryable, error = sender(f"{slow.url}/x", {"a": 1})
    assert retryable and error and error.startswith("timeout")
    retryable, error = sender(f"http://127.0.0.1:{free_port()}/x", {"a": 1})
    assert retryable and error and error.startswith("connection error")
    retryable, error = sender("not a url", {})
    assert not retryable and error
    sender.close()


def test_retries_stop_after_max_attempts_and_say_so() -> None:
    world, clock = World(), FakeClock()
    sender = RecordingSender([SendOutcome(True, "HTTP 503")] * 10)
    eng, history = engine(config("http://rx"), world, clock, sender, backoff=Backoff(max_attempts=3))
    world.failing.add("billing")
    at(clock, eng, 0)
    for _ in range(10):
        clock.advance(10)
        eng.flush()
    assert len(sender.calls) == 3
    assert history.deliveries[-1].error == "HTTP 503 (gave up after 3 attempts)"


def test_p0_repeats_escalates_without_ack_and_stops_after_ack() -> None:
    world, clock = World(), FakeClock()
    with Receiver() as rx:
        eng, history = engine(config(rx.url, repeat="2m"), world, clock)
        world.failing.add("billing")
        for m in range(0, 8):  # fired at 0: repeats at 2 and 4, escalation to mgr at 5, repeat at 7
            at(clock, eng, m)
        reasons = [(p, b["recipient"]["reason"]) for p, b in rx.received]
        assert reasons == [
            ("/alice", "firing"),
            ("/alice", "repeat"),
            ("/alice", "repeat"),
            ("/mgr", "escalation"),
            ("/mgr", "repeat"),
        ]
        assert rx.bodies("/mgr")[0]["recipient"]["step"] == 1
        fp = rx.received[0][1]["alerts"][0]["fingerprint"]
        acked = eng.acknowledge(fp, "mgr")
        assert acked is not None
        for m in range(8, 40):
            at(clock, eng, m)
        assert len(rx.received) == 5  # nothing after the ack
        assert eng.alerts("firing")["alerts"][0]["acknowledged_by"] == "mgr"
        world.failing.clear()
        at(clock, eng, 40)
        resolved = [(p, b["status"]) for p, b in rx.received[5:]]
    assert sorted(resolved) == [("/alice", "resolved"), ("/mgr", "resolved")]  # everyone paged
    assert [(a.fingerprint, a.by) for a in history.acks] == [(fp, "mgr")]


def test_ack_before_escalation_keeps_it_with_the_first_step() -> None:
    world, clock = World(), FakeClock()
    sender = RecordingSender()
    eng, _ = engine(config("http://rx"), world, clock, sender)
    world.failing.add("billing")
    at(clock, eng, 0)
    fp = eng.alerts()["alerts"][0]["fingerprint"]
    at(clock, eng, 4)
    assert eng.acknowledge(fp, "alice") is not None
    for m in range(5, 90):
        at(clock, eng, m)
    assert [url for url, _ in sender.calls] == ["http://rx/alice"]
    assert eng.acknowledge("0000000000000000", "alice") is None


def test_default_repeat_is_thirty_minutes_without_escalation_policy_steps() -> None:
    world, clock = World(), FakeClock()
    doc = config("http://rx")
    doc["escalation_policies"]["p0"]["steps"] = [{"notify": {"schedule": "primary"}}]
    sender = RecordingSender()
    eng, _ = engine(doc, world, clock, sender)
    world.failing.add("billing")
    for m in range(0, 61):
        at(clock, eng, m)
    assert [(body["recipient"]["reason"], body["alerts"][0]["status"]) for _, body in sender.calls] == [
        ("firing", "firing"),
        ("repeat", "firing"),  # minute 30
        ("repeat", "firing"),  # minute 60
    ]


def test_p1_inhibited_while_p0_fires_for_the_same_agent() -> None:
    world, clock = World(), FakeClock()
    with Receiver() as rx:
        eng, _ = engine(config(rx.url), world, clock)
        world.failing.add("billing")
        world.slow.update({"billing", "triage"})
        at(clock, eng, 0)
        at(clock, eng, 1)
        p1 = [b["commonLabels"]["agent"] for b in rx.bodies("/bob")]
        assert p1 == ["triage"]  # billing's P1 muted by billing's P0; triage's is not
        world.failing.clear()  # P0 resolves; billing is still slow
        at(clock, eng, 2)
        bob = [(b["commonLabels"]["agent"], b["status"]) for b in rx.bodies("/bob")]
    assert bob == [("triage", "firing"), ("billing", "firing")]  # sent once no longer muted


def test_p2_calls_the_deregistration_hook_and_pages_nobody(caplog: pytest.LogCaptureFixture) -> None:
    world, clock = World(), FakeClock()
    world.beats["billing-1"] = T0
    with Receiver() as registry, Receiver() as people:
        eng, history = engine(config(people.url, registry=registry.url), world, clock)
        with caplog.at_level(logging.WARNING, logger="reach_collector.alerting"):
            for s in range(0, 180, 15):
                clock.t = T0 + s
                eng.tick()
            world.beats["billing-1"] = T0 + 180
            clock.t = T0 + 185
            eng.tick()
        assert registry.received == [("/deregister", {"agent_id": "billing-1"})]
        assert people.received == []
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.getMessage().startswith("{")]
    assert [(x["action"], x["state"], x["agent"], x["paged"]) for x in lines] == [
        ("deregister", "firing", "billing-1", False),
        ("none (heartbeat resumed)", "resolved", "billing-1", False),
    ]
    fired = [t for t in history.transitions if t.to_state.value == "firing"]
    assert [(t.alertname, t.time - T0) for t in fired] == [("ReachAgentHeartbeatLost", 75)]  # 75 − 0 > 60
    assert [(d.kind, d.recipient, d.ok) for d in history.deliveries] == [("deregister", "registry", True)]


def test_p2_without_registry_only_logs(caplog: pytest.LogCaptureFixture) -> None:
    world, clock = World(), FakeClock()
    world.beats["a"] = T0 - 600
    sender = RecordingSender()
    eng, _ = engine(config("http://rx"), world, clock, sender)
    with caplog.at_level(logging.WARNING, logger="reach_collector.alerting"):
        eng.tick()
    assert sender.calls == []
    assert any('"action": "deregister"' in r.getMessage() for r in caplog.records)


def test_users_without_webhook_and_empty_schedules_are_recorded_as_undeliverable() -> None:
    world, clock = World(), FakeClock()
    doc = config("http://rx")
    doc["schedules"]["primary"]["layers"][0]["members"] = ["carol"]  # no user entry
    doc["routing"]["P1"] = {"notify": {"schedule": "late"}}
    doc["schedules"]["late"] = {"layers": [{"start": "2030-01-01T00:00:00", "members": ["bob"]}]}
    sender = RecordingSender()
    eng, history = engine(doc, world, clock, sender)
    world.failing.add("billing")
    world.slow.add("triage")
    eng.tick()
    assert sender.calls == []
    errors = sorted((d.recipient, d.error) for d in history.deliveries)
    assert errors == [
        ("carol", "user 'carol' has no webhook configured"),
        ("schedule:late", "nobody is on call"),
    ]


def test_alertmanager_push_replaces_direct_pages_and_resends_while_firing() -> None:
    world, clock = World(), FakeClock()
    with Receiver() as am, Receiver() as people:
        eng, _ = engine(config(people.url, alertmanager_url=am.url, interval="15s"), world, clock)
        world.failing.add("billing")
        for s in range(0, 135, 15):
            clock.t = T0 + s
            eng.tick()
        world.failing.clear()
        clock.t = T0 + 135
        eng.tick()
        pushes = am.bodies("/api/v2/alerts")
        assert people.received == []
    assert len(pushes) == 4  # at 0, 60, 120 (resend delay 1m), then the resolution at 135
    first = pushes[0][0]
    assert set(first) == {"labels", "annotations", "startsAt", "endsAt", "generatorURL"}
    assert first["labels"]["alertname"] == "ReachSuccessRateLow"
    assert first["endsAt"] == "2026-01-05T08:04:00Z"  # valid for 4 × max(1m, 15s)
    assert pushes[-1][0]["endsAt"] == "2026-01-05T08:02:15Z"  # resolved at 135 s

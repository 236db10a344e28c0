"""No page per agent: on a real collector (HTTP on loopback, evaluation on a fake clock), one ingest
naming 300 failing agents pages the on-call person once, naming all 300 — and its retry, its
escalation, its repeat and its resolve are one message each; 500 invented heartbeat ids reach the
registry at no more than its bound a minute, the rest waiting, and one whose heartbeat resumes
while it waits is never deregistered."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from alerting_fakes import T0, FakeClock, Receiver
from alerting_live import agent_span, live_collector, otlp, wait_for

LOGGER = "reach_collector.alerting"
AGENTS = [f"agent-{i:03d}" for i in range(300)]


def _doc(alice: str, mgr: str) -> dict[str, Any]:
    return {
        "alerting": {
            "repeat": "2m",
            "rules": {
                "ReachSuccessRateLow": {"for": "0s", "window": "10m", "min_calls": 3},
                "ReachP99LatencyHigh": {"enabled": False},
                "ReachAgentHeartbeatLost": {"enabled": False},
            },
        },
        "users": {"alice": {"webhook": f"{alice}/alice"}, "mgr": {"webhook": f"{mgr}/mgr"}},
        "schedules": {
            "primary": {"layers": [{"start": "2026-01-01T00:00:00", "length": "1w", "members": ["alice"]}]}
        },
        "escalation_policies": {
            "p0": {
                "steps": [
                    {"notify": {"schedule": "primary"}, "escalate_after": "1m"},
                    {"notify": {"users": ["mgr"]}},
                ]
            }
        },
        "routing": {"P0": {"escalation_policy": "p0"}},
    }


def _agents(body: dict[str, Any]) -> list[str]:
    return [a["labels"]["agent"] for a in body["alerts"]]


def test_300_failing_agents_in_one_ingest_are_one_page_to_the_on_call_person(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    t = T0 + 600.0
    caplog.set_level(logging.INFO, logger=LOGGER)
    with (
        Receiver([500]) as alice,
        Receiver() as mgr,
        live_collector(
            tmp_path / "t.duckdb", _doc(alice.url, mgr.url), alert_loop=False, clock=FakeClock(t)
        ) as c,
    ):
        engine = c.app.state.alerts
        spans = [agent_span(t - 1 - i, agent, error=True) for agent in AGENTS for i in range(3)]
        assert c.post("/v1/traces", otlp(spans)).status_code == 200  # one ingest, 900 spans

        engine.tick(t)  # 300 P0s fire at once: one message, answered 500
        engine.flush(t + 1.0)  # its retry: the same one message
        assert alice.answered == [500, 200] and mgr.received == []
        first, retry = alice.bodies("/alice")
        assert first == retry
        assert sorted(_agents(first)) == AGENTS  # every alert still named
        assert first["truncatedAlerts"] == 0 and first["status"] == "firing"
        assert first["groupLabels"] == {"alertname": "ReachSuccessRateLow"}
        assert first["groupKey"] == '{}/{severity="P0"}:{alertname="ReachSuccessRateLow"}'
        assert first["commonLabels"] == {
            "alertname": "ReachSuccessRateLow",
            "severity": "P0",
            "service": "billing-svc",
        }
        assert first["recipient"] == {
            "user": "alice",
            "via": "schedule:primary",
            "reason": "firing",
            "step": 0,
            "severity": "P0",
        }

        engine.tick(t + 15.0)  # nothing new is owed
        engine.tick(t + 60.0)  # not acknowledged after 1m: one escalation to mgr, all 300
        (escalation,) = mgr.bodies("/mgr")
        assert escalation["recipient"]["reason"] == "escalation" and len(escalation["alerts"]) == 300

        # One agent's alert is acknowledged (its page's ack URL): the repeat leaves it out.
        acked = first["alerts"][0]
        ack = httpx.post(acked["annotations"]["ack_url"], json={"by": "mgr"}, timeout=10)
        assert ack.status_code == 200, ack.text
        engine.tick(t + 180.0)  # 2m after the escalation: one repeat, 299 alerts
        _, repeat = mgr.bodies("/mgr")
        assert repeat["recipient"]["reason"] == "repeat"
        assert sorted(_agents(repeat)) == sorted(set(AGENTS) - {acked["labels"]["agent"]})

        engine.tick(t + 11 * 60.0)  # no calls in the window any more: one resolve to each person
        resolved = [b for b in alice.bodies() + mgr.bodies() if b["status"] == "resolved"]
        assert [b["receiver"] for b in resolved] == ["alice", "mgr"]
        assert all(sorted(_agents(b)) == AGENTS for b in resolved)
        assert (len(alice.received), len(mgr.received)) == (3, 3)

        # The deliveries API: one row per attempt, each listing its alerts; one alert finds them all.
        # (the history is written on the writer's thread, after the alert transitions)
        rows = wait_for(
            lambda: [d for d in c.get("/api/alerts/deliveries")["deliveries"] if d["kind"] == "resolved"]
        )
        rows = c.get("/api/alerts/deliveries")["deliveries"]
        assert [(d["recipient"], d["kind"], len(d["fingerprints"])) for d in rows] == [
            ("alice", "firing", 300),
            ("alice", "firing", 300),
            ("mgr", "escalation", 300),
            ("mgr", "repeat", 299),
            ("alice", "resolved", 300),
            ("mgr", "resolved", 300),
        ]
        assert all(d["agent"] is None for d in rows)  # 300 agents: none shared
        one = c.get("/api/alerts/deliveries", fingerprint=acked["fingerprint"])["deliveries"]
        assert [d["kind"] for d in one] == ["firing", "firing", "escalation", "resolved", "resolved"]

    sent = [r.getMessage() for r in caplog.records if r.getMessage().startswith("alert page sent:")]
    assert len(sent) == 5 and all("ReachSuccessRateLow 300 alerts" in m or "299 alerts" in m for m in sent)
    assert acked["fingerprint"] in sent[0]  # grep by fingerprint still finds the page


def test_500_invented_heartbeats_deregister_at_a_bounded_rate(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    t = T0 + 600.0
    clock = FakeClock(t)
    caplog.set_level(logging.INFO, logger=LOGGER)
    with Receiver() as registry:
        doc = {
            "alerting": {
                "registry": f"{registry.url}/mesh",
                "rules": {"ReachSuccessRateLow": {"enabled": False}},
            }
        }
        with live_collector(tmp_path / "t.duckdb", doc, alert_loop=False, clock=clock) as c:
            engine = c.app.state.alerts
            ids = [f"invented-{i:03d}" for i in range(500)]
            with httpx.Client(base_url=c.url, timeout=10) as client:
                for agent in ids:
                    assert client.post("/api/heartbeats", json={"agent_id": agent}).status_code == 202
            per_minute = []
            for minute in range(1, 20):
                clock.t = t + 60.0 * minute + 1  # every lost heartbeat fires at minute 1
                if minute >= 3:  # two agents still waiting come back before their turn, and stay
                    for agent in ids[-2:]:
                        assert c.post("/api/heartbeats", {"agent_id": agent}).status_code == 202
                before = len(registry.received)
                for s in range(0, 60, 15):  # evaluations every 15 s
                    engine.tick(clock.t + s)
                per_minute.append(len(registry.received) - before)

            def recorded() -> list[dict[str, Any]]:
                rows = c.get("/api/alerts/deliveries", limit=10_000)["deliveries"]
                return rows if len(rows) == 500 else []

            rows = wait_for(recorded, timeout=60)

    assert max(per_minute) == 30  # alerting.registry_per_minute's default
    assert per_minute[:3] == [30, 30, 30]
    called = [body["agent_id"] for path, body in registry.received]
    assert {path for path, _ in registry.received} == {"/mesh/deregister"}
    assert sorted(called) == ids[:-2] and len(set(called)) == 498  # once each, the returned two never
    dropped = [d for d in rows if d["kind"] == "deregister" and not d["ok"]]
    assert [d["error"] for d in dropped] == ["superseded: its heartbeat resumed first"] * 2
    waiting = [r.getMessage() for r in caplog.records if "waiting for the registry" in r.getMessage()]
    assert waiting[0].startswith("alert deregistrations: 470 waiting for the registry (at most 30")
    assert len(waiting) <= 20  # one line when the number changes, not one per alert
    actions = [json.loads(m) for r in caplog.records if (m := r.getMessage()).startswith('{"action"')]
    assert sum(1 for a in actions if a["action"] == "deregister") == 500  # each one still logged

"""No page per agent: on a real collector (HTTP on loopback, evaluation on a fake clock), one ingest
naming 300 failing agents pages the on-call person once, naming all 300 — and its retry, its
escalation, its repeat and its resolve are one message each."""

from __future__ import annotations

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

"""Alerting end to end: a real collector (uvicorn on loopback, DuckDB file) running its alert loop
on the real clock with short durations from the config, and real local HTTP receivers."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from alerting_fakes import MIN, T0, Receiver
from alerting_live import NS, agent_span, live_collector, otlp, wait_for
from test_alert_store_data import history_body

import reach_otel


def test_replay_over_twenty_minutes_of_stored_history_is_pure(tmp_path: Path) -> None:
    with (
        Receiver() as alice,
        live_collector(
            tmp_path / "t.duckdb",
            {"users": {"alice": {"webhook": alice.url}}, "routing": {"P0": {"notify": {"users": ["alice"]}}}},
            alert_loop=False,
        ) as c,
    ):
        assert c.post("/v1/traces", history_body()).status_code == 200
        body = {"since": str(int(T0 * NS)), "until": "2026-01-05T08:20:00Z", "step": "1m"}
        response = c.post("/api/alerts/replay", body)
        assert response.status_code == 200, response.text
        result = response.json()
        got = [
            (t["time"], t["alertname"], t["labels"]["agent"], t["from"], t["to"])
            for t in result["transitions"]
        ]
        assert got == [
            ("2026-01-05T08:03:00Z", "ReachSuccessRateLow", "billing", "inactive", "pending"),
            ("2026-01-05T08:08:00Z", "ReachSuccessRateLow", "billing", "pending", "firing"),
            ("2026-01-05T08:09:00Z", "ReachAgentHeartbeatLost", "billing-1", "inactive", "pending"),
            ("2026-01-05T08:09:00Z", "ReachAgentHeartbeatLost", "billing-1", "pending", "firing"),
            ("2026-01-05T08:13:00Z", "ReachSuccessRateLow", "billing", "firing", "resolved"),
            ("2026-01-05T08:16:00Z", "ReachAgentHeartbeatLost", "billing-1", "firing", "resolved"),
        ]
        assert result["evaluations"] == 21 and result["errors"] == []
        # Pure: nobody notified, no history written, the live engine untouched.
        assert alice.received == []
        assert c.store.query("SELECT count(*) FROM alert_transitions") == [(0,)]
        assert c.get("/api/alerts") == {"alerts": []}
        bad = c.post("/api/alerts/replay", {"since": "yesterday", "until": "2026-01-05T08:20:00Z"})
        assert bad.status_code == 400 and "since" in bad.json()["detail"]
        too_many = c.post("/api/alerts/replay", {"since": "0", "until": str(int(T0 * NS)), "step": "1s"})
        assert too_many.status_code == 400


def test_heartbeats_stop_p2_fires_deregisters_and_pages_nobody(tmp_path: Path) -> None:
    with Receiver() as registry, Receiver() as alice:
        doc = {
            "alerting": {
                "interval": 0.2,
                "registry": registry.url,
                "rules": {"ReachAgentHeartbeatLost": {"after": "1s"}},
            },
            "users": {"alice": {"webhook": alice.url}},
            "routing": {"P0": {"notify": {"users": ["alice"]}}, "P1": {"notify": {"users": ["alice"]}}},
        }
        with live_collector(tmp_path / "t.duckdb", doc) as c:
            beat = reach_otel.heartbeat("mesh-billing-1", every=0.2, collector=c.url, capabilities=["refund"])
            assert beat is not None
            try:
                wait_for(lambda: beat.sent >= 2)
                agents = c.get("/api/agents")["agents"]
                assert [(a["agent_id"], a["status"]) for a in agents] == [("mesh-billing-1", "live")]
                assert c.get("/api/alerts", state="firing") == {"alerts": []}
            finally:
                beat.stop(deregister=False)  # as a crash: no "stopped", so P2 fires
            firing = wait_for(lambda: c.get("/api/alerts", state="firing")["alerts"])
            assert [(a["alertname"], a["severity"], a["labels"]["agent"]) for a in firing] == [
                ("ReachAgentHeartbeatLost", "P2", "mesh-billing-1")
            ]
            assert c.get("/api/agents")["agents"][0]["status"] == "lost"
            hooks = wait_for(lambda: registry.bodies("/deregister"))
            assert hooks == [{"agent_id": "mesh-billing-1"}]
            metrics = _text(c.url + "/metrics")
            assert (
                'reach_alert_state{agent="mesh-billing-1",alertname="ReachAgentHeartbeatLost",'
                'alertstate="firing",service="",severity="P2"} 1.0'
            ) in metrics
            time.sleep(0.5)
            assert alice.received == []  # P2 pages nobody
            assert len(registry.bodies("/deregister")) == 1  # once per firing episode
            # Heartbeats resuming resolves it.
            assert c.post("/api/heartbeats", {"agent_id": "mesh-billing-1"}).status_code == 202
            wait_for(lambda: c.get("/api/alerts", state="resolved")["alerts"])
            assert "mesh-billing-1" not in _text(c.url + "/metrics").split("reach_alert_state")[-1]


def _text(url: str) -> str:
    import httpx

    return httpx.get(url, timeout=10).text


def _kinds(receiver: Receiver) -> list[tuple[str, str]]:
    return [(b["recipient"]["reason"], b["alerts"][0]["labels"]["alertname"]) for b in receiver.bodies()]


def test_p0_pages_on_call_retries_repeats_escalates_until_ack_and_inhibits_p1(tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    with Receiver([500]) as alice, Receiver() as mgr, Receiver() as bob:
        doc: dict[str, Any] = {
            "alerting": {
                "interval": 0.2,
                "repeat": "2s",
                "thresholds": {"billing": 10},
                "rules": {
                    "ReachSuccessRateLow": {"for": "1s", "min_calls": 3},
                    "ReachP99LatencyHigh": {"for": "2s", "min_calls": 3},
                },
            },
            "users": {
                "alice": {"webhook": alice.url},
                "mgr": {"webhook": mgr.url},
                "bob": {"webhook": bob.url},
            },
            "schedules": {
                "primary": {
                    "layers": [
                        {"name": "all", "start": "2026-01-01T00:00:00", "length": "1w", "members": ["alice"]}
                    ]
                }
            },
            "escalation_policies": {
                "p0": {
                    "steps": [
                        {"notify": {"schedule": "primary"}, "escalate_after": "3.5s"},
                        {"notify": {"users": ["mgr"]}},
                    ]
                }
            },
            "routing": {"P0": {"escalation_policy": "p0"}, "P1": {"notify": {"users": ["bob"]}}},
        }
        with live_collector(db, doc) as c:
            assert c.get("/api/oncall")["schedules"][0]["now"] == "alice"
            now = time.time()
            # 8 of 10 calls fail, each 100 ms against a 10 ms threshold: P0 and P1 both breach for a minute.
            spans = [agent_span(now - i * 0.1, "billing", error=i < 8) for i in range(10)]
            assert c.post("/v1/traces", otlp(spans)).status_code == 200
            # The first delivery gets a 500; the retry (1 s backoff) gets through.
            wait_for(lambda: len(alice.answered) >= 2)
            assert alice.answered[:2] == [500, 200]
            first = alice.bodies()[1]
            assert first["version"] == "4" and first["status"] == "firing" and first["receiver"] == "alice"
            (alert,) = first["alerts"]
            labels = {"alertname": "ReachSuccessRateLow", "severity": "P0", "agent": "billing"}
            assert alert["labels"] == {**labels, "service": "billing-svc"}
            assert alert["endsAt"] == "0001-01-01T00:00:00Z" and alert["generatorURL"].startswith("http")
            assert {"groupKey", "groupLabels", "commonLabels", "commonAnnotations", "externalURL"} <= set(
                first
            )
            assert first["recipient"]["via"] == "schedule:primary"
            fp = alert["fingerprint"]
            wait_for(lambda: ("repeat", "ReachSuccessRateLow") in _kinds(alice))
            wait_for(lambda: ("escalation", "ReachSuccessRateLow") in _kinds(mgr), timeout=10)
            # P1 (for: 2s) fires after the P0 and is inhibited by it on the same agent: bob hears nothing.
            firing = {a["alertname"]: a for a in c.get("/api/alerts", state="firing")["alerts"]}
            assert set(firing) == {"ReachSuccessRateLow", "ReachP99LatencyHigh"}
            assert bob.received == []

            ack = c.post(f"/api/alerts/{fp}/ack", {"by": "alice"})
            assert ack.status_code == 200, ack.text
            assert c.post("/api/alerts/0000000000000000/ack", {"by": "alice"}).status_code == 404
            again = c.post(f"/api/alerts/{fp}/ack", {})
            assert again.status_code == 200 and again.json()["already_acknowledged"] is True
            assert again.json()["acknowledged_by"] == "alice"
            assert c.post(f"/api/alerts/{fp}/ack", {"by": 7}).status_code == 400
            sent = (len(alice.received), len(mgr.received))
            time.sleep(2.5)  # longer than `repeat`: nothing more after the ack
            assert (len(alice.received), len(mgr.received)) == sent
            assert bob.received == []
            acked = [a for a in c.get("/api/alerts", state="firing")["alerts"] if a["fingerprint"] == fp]
            assert acked[0]["acknowledged_by"] == "alice"
            attempts = c.get("/api/alerts/deliveries", fingerprint=fp)["deliveries"]
            assert [(a["recipient"], a["ok"], a["retryable"]) for a in attempts[:2]] == [
                ("alice", False, True),
                ("alice", True, False),
            ]

        # A restart keeps the history and picks the firing, acknowledged alert up again.
        with live_collector(db, doc, alert_loop=False) as c2:
            alerts = {a["fingerprint"]: a for a in c2.get("/api/alerts")["alerts"]}
            assert alerts[fp]["state"] == "firing" and alerts[fp]["acknowledged_by"] == "alice"
            assert c2.get("/api/alerts/deliveries", fingerprint=fp)["deliveries"]
            assert c2.store.query("SELECT count(*) FROM alert_acks") == [(1,)]


def test_resolved_history_survives_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    with live_collector(db, alert_loop=False) as c:
        engine = c.app.state.alerts
        assert c.post("/api/heartbeats", {"agent_id": "a1", "service": "svc"}).status_code == 202
        t = time.time()
        engine.tick(t + 2 * MIN)  # lost → firing
        assert c.post("/api/heartbeats", {"agent_id": "a1"}).status_code == 202
        engine.tick(t + 2 * MIN + 1)  # the new heartbeat at ≈ t is still older than 60 s → firing
        beat_at = t + 2 * MIN + 5
        engine.data.heartbeats = lambda now: {"a1": _beat(beat_at)}  # resumed (stand-in data)
        engine.tick(beat_at + 1)
        assert [a["state"] for a in c.get("/api/alerts")["alerts"]] == ["resolved"]
    with live_collector(db, alert_loop=False) as c2:
        (alert,) = c2.get("/api/alerts", state="resolved")["alerts"]
        assert alert["alertname"] == "ReachAgentHeartbeatLost" and alert["labels"]["agent"] == "a1"
        assert alert["fired_at"] is not None and alert["resolved_at"] is not None
        assert c2.get("/api/alerts", state="firing") == {"alerts": []}


def _beat(t: float) -> Any:
    from reach_collector.alerting.inputs.data import Heartbeat

    return Heartbeat(t)

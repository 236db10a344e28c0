"""Heartbeats across a clean exit and a collector restart, on subprocess collectors sharing one
DuckDB file: `status: "stopped"` never fires P2 and takes the agent's series off /metrics until it
beats again; an agent lost before a restart keeps its heartbeat series after it (so Prometheus's
P2 does not resolve silently); the route warnings appear only when a config was given."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
from alerting_fakes import MIN, T0, FakeClock
from alerting_live import live_collector, wait_for
from collector_process import CollectorProcess

SERIES = "reach_agent_last_heartbeat_timestamp_seconds"
CONFIG = """\
server: {decode_workers: 0}
alerting:
  interval: 0.2s
  rules:
    ReachAgentHeartbeatLost: {after: 3s}
"""


def _beats(url: str) -> dict[str, float]:
    text = httpx.get(url + "/metrics", timeout=10).text
    return {
        m[1]: float(m[2])
        for m in re.finditer(rf'^{SERIES}{{agent="([^"]+)"(?:,service="[^"]*")?}} (\S+)$', text, re.M)
    }


def _beat(url: str, agent: str, status: str | None = None) -> None:
    body = {"agent_id": agent} if status is None else {"agent_id": agent, "status": status}
    response = httpx.post(url + "/api/heartbeats", json=body, timeout=10)
    assert response.status_code == 202, response.text


def _statuses(c: CollectorProcess) -> dict[str, str]:
    return {a["agent_id"]: a["status"] for a in c.get("/api/agents")["agents"]}


def _firing(c: CollectorProcess) -> list[tuple[str, str]]:
    return sorted(
        (a["alertname"], a["labels"]["agent"]) for a in c.get("/api/alerts", state="firing")["alerts"]
    )


def _output(c: CollectorProcess) -> str:
    return c.output()


def test_stopped_never_fires_and_lost_survives_a_restart(tmp_path: Path) -> None:
    db, config = tmp_path / "t.duckdb", tmp_path / "reach.yaml"
    config.write_text(CONFIG)

    with CollectorProcess(db, "--config", str(config)) as c:
        _beat(c.url, "lost-1")
        _beat(c.url, "gone-1")
        _beat(c.url, "gone-1", "stopped")  # a clean exit
        assert _statuses(c)["gone-1"] == "stopped"
        wait_for(lambda: _firing(c), timeout=30)
        time.sleep(1.0)  # more evaluations, all past gone-1's `after` too
        firing = _firing(c)
        assert firing == [("ReachAgentHeartbeatLost", "lost-1")], (c.get("/api/alerts"), _statuses(c))
        assert _statuses(c) == {"gone-1": "stopped", "lost-1": "lost"}
        before = _beats(c.url)
        assert set(before) == {"lost-1"}  # a stopped agent has no series for Prometheus's P2
    first = _output(c)
    assert len(re.findall(r"alert firing: ReachAgentHeartbeatLost P2 agent=lost-1 ", first)) == 1
    assert "agent=gone-1" not in first
    assert "routing.P0: no route" in first  # a config was given, and it has no routes

    with CollectorProcess(db, "--config", str(config)) as c2:
        assert _beats(c2.url) == before  # from the heartbeat table, before any new beat
        assert _statuses(c2) == {"gone-1": "stopped", "lost-1": "lost"}
        assert _firing(c2) == [("ReachAgentHeartbeatLost", "lost-1")]
        _beat(c2.url, "gone-1")  # back: live again, with a series
        assert _statuses(c2)["gone-1"] == "live"
        assert set(_beats(c2.url)) == {"lost-1", "gone-1"}

    with CollectorProcess(db) as c3:  # no config at all
        assert "lost-1" in _beats(c3.url)
    assert "no route" not in _output(c3)


def test_stopped_then_live_again_on_a_fake_clock(tmp_path: Path) -> None:
    """Stopped: silent for as long as it likes. A later beat makes it live, and silence after
    that (a crash) is P2 again."""
    clock = FakeClock(T0)
    with live_collector(tmp_path / "t.duckdb", alert_loop=False, clock=clock) as c:
        engine = c.app.state.alerts
        assert c.post("/api/heartbeats", {"agent_id": "a1"}).status_code == 202
        clock.advance(10)
        stop = c.post("/api/heartbeats", {"agent_id": "a1", "status": "stopped"})
        assert stop.status_code == 202 and stop.json()["status"] == "stopped"
        for minutes in (2, 10, 60):
            assert engine.tick(T0 + minutes * MIN) == []
        assert c.get("/api/agents")["agents"][0]["status"] == "stopped"
        clock.t = T0 + 60 * MIN
        assert c.post("/api/heartbeats", {"agent_id": "a1"}).status_code == 202
        assert c.get("/api/agents")["agents"][0]["status"] == "live"
        fired = engine.tick(T0 + 62 * MIN)
        assert [(t.alertname, t.labels["agent"], t.to_state.value) for t in fired][-1] == (
            "ReachAgentHeartbeatLost",
            "a1",
            "firing",
        )
        bad = c.post("/api/heartbeats", {"agent_id": "a1", "status": "dead"})
        assert bad.status_code == 400 and "status" in bad.json()["detail"]

"""`POST /api/heartbeats` on a real collector: validation, the ingest-token scope (§11), storage."""

from __future__ import annotations

from pathlib import Path

import httpx
from alerting_live import live_collector


def test_heartbeat_body_is_validated_and_stored(tmp_path: Path) -> None:
    with live_collector(tmp_path / "t.duckdb", alert_loop=False) as c:
        ok = c.post(
            "/api/heartbeats", {"agent_id": "b-1", "endpoint": "http://b:8000", "capabilities": ["refund"]}
        )
        assert ok.status_code == 202 and ok.json()["agent_id"] == "b-1"
        for body, word in (
            ({}, "agent_id"),
            ({"agent_id": 7}, "agent_id"),
            ({"agent_id": "x", "capabilities": "refund"}, "capabilities"),
            ({"agent_id": "x", "endpoint": ""}, "endpoint"),
            (["agent_id"], "object"),
        ):
            bad = c.post("/api/heartbeats", body)
            assert bad.status_code == 400 and word in bad.json()["detail"], body
        garbage = httpx.post(
            c.url + "/api/heartbeats",
            content=b"{not json",
            headers={"content-type": "application/json"},
            timeout=10,
        )
        assert garbage.status_code == 400
        rows = c.store.query("SELECT agent_id, endpoint, capabilities FROM heartbeats")
        assert rows == [("b-1", "http://b:8000", '["refund"]')]
        assert (
            'reach_agent_last_heartbeat_timestamp_seconds{agent="b-1",service=""}'
            in httpx.get(c.url + "/metrics").text
        )


def test_heartbeats_take_the_ingest_token(tmp_path: Path) -> None:
    doc = {"auth": {"ingest_token": "in-tok", "query_token": "q-tok"}}
    with live_collector(tmp_path / "t.duckdb", doc, alert_loop=False) as c:

        def beat(token: str | None) -> int:
            headers = {"authorization": f"Bearer {token}"} if token else {}
            return c.post("/api/heartbeats", {"agent_id": "a"}, headers=headers).status_code

        assert (beat(None), beat("wrong"), beat("q-tok"), beat("in-tok")) == (401, 401, 403, 202)
        agents = httpx.get(c.url + "/api/agents", headers={"authorization": "Bearer q-tok"}, timeout=10)
        assert agents.status_code == 200 and agents.json()["agents"][0]["agent_id"] == "a"
        for path in ("/api/agents", "/api/alerts", "/api/oncall"):
            assert httpx.get(c.url + path, headers={"authorization": "Bearer in-tok"}).status_code == 403

"""The rules over a real collector's DuckDB store: 20 minutes of spans and heartbeat spans posted
as OTLP JSON, then replayed through ``StoreAlertData`` — the historical windows the store answers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alerting_fakes import MIN, T0, RecordingSender
from fastapi.testclient import TestClient

from reach_collector.alerting.config import load_alerting
from reach_collector.alerting.evaluation.engine import AlertEngine
from reach_collector.alerting.evaluation.history import MemoryHistory
from reach_collector.alerting.inputs.data import Heartbeat
from reach_collector.alerting.inputs.store_data import StoreAlertData
from reach_collector.app import create_app
from reach_collector.config import Settings
from reach_collector.store.duckdb_store import DuckDBStore
from reach_otel import semconv as sc

NS = 1_000_000_000


def _attr(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def _span(end_s: float, name: str, attrs: list[dict[str, Any]], error: bool = False) -> dict[str, Any]:
    end = int(end_s * NS)
    return {
        "traceId": os.urandom(16).hex(),
        "spanId": os.urandom(8).hex(),
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(end - 100_000_000),
        "endTimeUnixNano": str(end),
        "attributes": attrs,
        "status": {"code": 2 if error else 0},
    }


def history_body() -> dict[str, Any]:
    """billing: a call every 10 s for 20 min, failing when it ends in [2m, 12m); billing-1
    heartbeats every 30 s except in [8m, 16m)."""
    agent = [_attr(sc.GEN_AI_OPERATION_NAME, sc.OP_AGENT), _attr(sc.GEN_AI_AGENT_NAME, "billing")]
    calls = [_span(T0 + s, "invoke_agent billing", agent, error=120 <= s < 720) for s in range(10, 1201, 10)]
    beat = [_attr(sc.GEN_AI_AGENT_ID, "billing-1")]
    beats = [_span(T0 + s, sc.HEARTBEAT_SPAN_NAME, beat) for s in range(0, 1201, 30) if not 480 <= s < 960]
    resource = {"attributes": [_attr("service.name", "billing-svc")]}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": calls + beats}]}]}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[DuckDBStore]:
    db = tmp_path / "traces.duckdb"
    store = DuckDBStore(db)
    app = create_app(Settings(db=str(db), retention_s=0), store=store)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        response = client.post("/v1/traces", json=history_body())
        assert response.status_code == 200, response.text
    yield store
    store.close()


def test_replay_over_stored_spans_and_heartbeats(store: DuckDBStore) -> None:
    data = StoreAlertData(store)
    stats = data.agent_stats(T0 + 3 * MIN, 60.0)
    assert stats["billing"].calls == 6 and stats["billing"].errors == 6
    assert stats["billing"].service == "billing-svc" and stats["billing"].p99_ms == pytest.approx(100.0)
    assert data.heartbeats(T0 + 9 * MIN)["billing-1"].last_seen == T0 + 450

    sender, history = RecordingSender(), MemoryHistory()
    engine = AlertEngine(load_alerting({}), data, sender=sender, history=history, clock=lambda: T0 + 3600)
    result = engine.replay(T0, T0 + 20 * MIN, MIN)
    got = [(t.time - T0, t.alertname, t.from_state.value, t.to_state.value) for t in result.transitions]
    assert got == [
        # the 1-minute window ending at 2m still holds five good calls: the breach starts at 3m
        (3 * MIN, "ReachSuccessRateLow", "inactive", "pending"),
        (8 * MIN, "ReachSuccessRateLow", "pending", "firing"),
        (9 * MIN, "ReachAgentHeartbeatLost", "inactive", "pending"),  # last at 7:30, 90 s ago
        (9 * MIN, "ReachAgentHeartbeatLost", "pending", "firing"),
        (13 * MIN, "ReachSuccessRateLow", "firing", "resolved"),  # (12m, 13m] is all good calls
        (16 * MIN, "ReachAgentHeartbeatLost", "firing", "resolved"),
    ]
    assert result.errors == []
    assert sender.calls == [] and history.transitions == []


def test_api_heartbeats_merge_with_heartbeat_spans(store: DuckDBStore) -> None:
    def api(now_ns: int, lookback_s: float) -> dict[str, Heartbeat]:
        return {"billing-1": Heartbeat(T0 + 500, "billing-svc"), "tools-1": Heartbeat(T0 + 10)}

    beats = StoreAlertData(store, api_heartbeats=api).heartbeats(T0 + 9 * MIN)
    assert beats["billing-1"] == Heartbeat(T0 + 500, "billing-svc")  # later than the span at 450
    assert beats["tools-1"].last_seen == T0 + 10

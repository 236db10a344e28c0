"""Stateless collectors: two collectors on one ClickHouse database each answer with the other's
spans (trace by id and search), and heartbeats and alert history written through one are read
through the other."""

from __future__ import annotations

import time

import httpx
from ch_collectors import start_in_process
from ch_server import ClickHouseServer
from ch_spans import make_request

from reach_collector.query.heartbeats import last_posted
from reach_collector.store.clickhouse import ClickHouseStore


def test_two_collectors_one_database(clickhouse: ClickHouseServer, ch_database: str) -> None:
    db = clickhouse.url(ch_database)
    a = start_in_process(ClickHouseStore(db), db)
    b = start_in_process(ClickHouseStore(db), db)
    try:
        now = time.time_ns()
        body_a, ids_a = make_request(now, traces=5, seed=61, services=("svc-a",))
        body_b, ids_b = make_request(now, traces=5, seed=62, services=("svc-b",))
        assert a.post(body_a).status_code == 200
        assert b.post(body_b).status_code == 200
        for reader, ids in ((a, ids_b), (b, ids_a)):  # each reads what the other stored
            for tid in ids:
                trace = reader.get(f"/api/traces/{tid}")
                assert trace.status_code == 200 and trace.json()["span_count"] > 0
        found_a = {t["trace_id"] for t in a.get("/api/traces", limit="100").json()["traces"]}
        found_b = {t["trace_id"] for t in b.get("/api/traces", limit="100").json()["traces"]}
        assert found_a == found_b == set(ids_a) | set(ids_b)
        assert {t["trace_id"] for t in a.get("/api/traces", service="svc-b").json()["traces"]} == set(ids_b)

        beat = httpx.post(
            f"{a.url}/api/heartbeats", json={"agent_id": "agent-7", "service": "svc-a"}, timeout=10
        )
        assert beat.status_code == 202, beat.text
        seen = last_posted(b.store, time.time_ns(), 60)
        assert seen["agent-7"].service == "svc-a"

        row = (now, "HighLatency", "warning", "fp-1", "{}", "inactive", "firing", 1.5, "{}", now, now, None)
        a.store.append("alert_transitions", [row])
        assert b.store.query("SELECT fingerprint, to_state FROM alert_transitions") == [("fp-1", "firing")]
    finally:
        a.close()
        b.close()

"""With tokens on: a wrong, missing or other-scope token stores nothing and returns nothing, and no
token ever appears in the collector's logs."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from collector_helpers import RunningCollector, request_with

from reach_collector.config import Settings

PB = {"content-type": "application/x-protobuf"}
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def payload() -> bytes:
    now = time.time_ns()
    span = {
        "trace_id": bytes.fromhex(TRACE),
        "span_id": bytes.fromhex("00f067aa0ba902b7"),
        "name": "invoke_agent Billing",
        "start": now - 1_000_000,
        "end": now,
    }
    return request_with([span]).SerializeToString()


def test_rejected_tokens_store_and_return_nothing(start_collector, tmp_path: Path, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    secured: RunningCollector = start_collector(
        Settings(db=str(tmp_path / "s.duckdb"), ingest_token="in-SECRET-1", query_token="q-SECRET-2")
    )
    for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": "Bearer q-SECRET-2"}):
        response = secured.post("/v1/traces", content=payload(), headers={**PB, **headers})
        assert response.status_code in (401, 403)
    assert secured.store.count_spans() == 0

    ok = secured.post("/v1/traces", content=payload(), headers={**PB, "authorization": "Bearer in-SECRET-1"})
    assert ok.status_code == 200
    assert secured.store.count_spans() == 1
    for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": "Bearer in-SECRET-1"}):
        response = secured.get(f"/api/traces/{TRACE}", headers=headers)
        assert response.status_code in (401, 403)
        assert "Billing" not in response.text and TRACE not in response.text
    assert (
        secured.get(f"/api/traces/{TRACE}", headers={"authorization": "Bearer q-SECRET-2"}).status_code == 200
    )
    assert "SECRET" not in caplog.text

"""Ingest failure modes: 400, 404, 413 (before and after decompression), 415, 429, partial success."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Callable
from typing import Any

from collector_helpers import BlockingStore, RunningCollector, request_with
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceResponse,
)

from reach_collector.config import Settings
from reach_collector.ingest.writer import Writer
from reach_collector.store.duckdb_store import DuckDBStore

PB = {"content-type": "application/x-protobuf"}


def test_protobuf_partial_success(collector: RunningCollector) -> None:
    req = request_with(
        [
            {},
            {"span_id": b"\x01\x02"},
            {"trace_id": bytes(16)},
            {"span_id": b"\x09" * 8, "end": 1},  # ends before it starts
            {"span_id": b"\x0a" * 8, "start": 2**64 - 1, "end": 2**64 - 1},
        ]
    )
    response = collector.post("/v1/traces", content=req.SerializeToString(), headers=PB)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/x-protobuf"
    reply = ExportTraceServiceResponse.FromString(response.content)
    assert reply.partial_success.rejected_spans == 4
    assert "span_id" in reply.partial_success.error_message
    assert collector.get("/api/traces/" + bytes(range(1, 17)).hex()).json()["span_count"] == 1


def test_undecodable_protobuf_is_400_with_status(collector: RunningCollector) -> None:
    response = collector.post("/v1/traces", content=b"\xff\xff\xff\xff garbage", headers=PB)
    assert response.status_code == 400
    status = status_pb2.Status.FromString(response.content)
    assert "protobuf" in status.message


def test_unknown_and_malformed_trace_ids(collector: RunningCollector) -> None:
    assert collector.get("/api/traces/" + "ab" * 16).status_code == 404
    for bad in ("xyz", "ab" * 15, "zz" * 16, "0" * 32, "ab" * 17):
        response = collector.get("/api/traces/" + bad)
        assert response.status_code == 400, bad
        assert "trace id" in response.json()["detail"]


def test_unsupported_media_is_415(collector: RunningCollector) -> None:
    for headers in ({"content-type": "text/plain"}, {}, {"content-type": "application/xml"}):
        assert collector.post("/v1/traces", content=b"{}", headers=headers).status_code == 415
    response = collector.post("/v1/traces", content=b"{}", headers={**PB, "content-encoding": "br"})
    assert response.status_code == 415


def test_too_large_is_413_before_and_after_decompression(
    start_collector: Callable[..., RunningCollector], tmp_path: Any
) -> None:
    c = start_collector(Settings(db=str(tmp_path / "x.duckdb"), max_body_bytes=4096))
    assert c.post("/v1/traces", content=b"\0" * 5000, headers=PB).status_code == 413
    bomb = gzip.compress(b"\0" * 2_000_000)
    assert len(bomb) < 4096
    response = c.post("/v1/traces", content=bomb, headers={**PB, "content-encoding": "gzip"})
    assert response.status_code == 413
    assert c.get("/healthz").status_code == 200


def test_full_queue_is_429_with_retry_after(
    start_collector: Callable[..., RunningCollector], tmp_path: Any
) -> None:
    store = DuckDBStore(tmp_path / "blocked.duckdb")
    blocking = BlockingStore(store)
    writer = Writer(blocking, max_pending_spans=1)  # type: ignore[arg-type]
    c = start_collector(Settings(db=str(tmp_path / "unused.duckdb")), writer=writer)
    body = request_with([{}]).SerializeToString()
    first: dict[str, Any] = {}
    t = threading.Thread(target=lambda: first.update(r=c.post("/v1/traces", content=body, headers=PB)))
    t.start()
    assert blocking.entered.wait(10)
    # The first request's span is still in the queue's accounting: the next one is turned away.
    response = c.post("/v1/traces", content=body, headers=PB)
    assert response.status_code == 429
    assert int(response.headers["retry-after"]) >= 1
    blocking.gate.set()
    t.join(10)
    assert first["r"].status_code == 200
    store.close()


def test_too_many_bytes_in_flight_is_429(collector: RunningCollector) -> None:
    collector.app.state.ingest.max_inflight_bytes = 0
    response = collector.post("/v1/traces", content=request_with([{}]).SerializeToString(), headers=PB)
    assert response.status_code == 429
    assert response.headers["retry-after"] == "1"
    collector.app.state.ingest.max_inflight_bytes = 1 << 30
    assert (
        collector.post("/v1/traces", content=request_with([{}]).SerializeToString(), headers=PB).status_code
        == 200
    )
    assert collector.app.state.ingest.inflight_bytes == 0

"""OTLP/gRPC ingest: the real gRPC exporter (plain and gzip), partial success, RESOURCE_EXHAUSTED."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
from collector_helpers import (
    BlockingStore,
    RunningCollector,
    assert_trace_matches,
    produce_rich_trace,
    request_with,
)
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

from reach_collector.api.otlp_grpc import start_grpc
from reach_collector.config import Settings
from reach_collector.ingest.writer import Writer
from reach_collector.store.duckdb_store import DuckDBStore


@pytest.fixture
def grpc_for() -> Iterator[Callable[[RunningCollector], str]]:
    servers: list[grpc.Server] = []

    def start(c: RunningCollector) -> str:
        settings = c.app.state.settings
        server, port = start_grpc(
            c.app.state.ingest,
            "127.0.0.1",
            0,
            ingest_token=settings.ingest_token,
            query_token=settings.query_token,
        )
        servers.append(server)
        return f"127.0.0.1:{port}"

    yield start
    for server in servers:
        server.stop(grace=None)


@pytest.mark.parametrize("compression", [grpc.Compression.NoCompression, grpc.Compression.Gzip])
def test_grpc_exporter_roundtrip_is_exact(
    collector: RunningCollector, grpc_for: Callable[[RunningCollector], str], compression: Any
) -> None:
    exporter = OTLPSpanExporter(endpoint=grpc_for(collector), insecure=True, compression=compression)
    trace_id, sdk_spans = produce_rich_trace(exporter)
    response = collector.get(f"/api/traces/{trace_id:032x}")
    assert response.status_code == 200
    assert_trace_matches(response.json(), trace_id, sdk_spans)


def test_grpc_partial_success(
    collector: RunningCollector, grpc_for: Callable[[RunningCollector], str]
) -> None:
    with grpc.insecure_channel(grpc_for(collector)) as channel:
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        reply = stub.Export(request_with([{}, {"span_id": b"\x01"}]), timeout=10)
    assert reply.partial_success.rejected_spans == 1
    assert "span_id" in reply.partial_success.error_message
    assert collector.get("/api/traces/" + bytes(range(1, 17)).hex()).json()["span_count"] == 1


def test_grpc_backpressure_is_resource_exhausted(
    start_collector: Callable[..., RunningCollector],
    grpc_for: Callable[[RunningCollector], str],
    tmp_path: Any,
) -> None:
    store = DuckDBStore(tmp_path / "blocked.duckdb")
    blocking = BlockingStore(store)
    c = start_collector(Settings(db=str(tmp_path / "u.duckdb")), writer=Writer(blocking, max_pending_spans=1))  # type: ignore[arg-type]
    target = grpc_for(c)
    results: dict[str, Any] = {}
    with grpc.insecure_channel(target) as channel:
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        t = threading.Thread(target=lambda: results.update(first=stub.Export(request_with([{}]), timeout=20)))
        t.start()
        assert blocking.entered.wait(10)
        with pytest.raises(grpc.RpcError) as err:
            stub.Export(request_with([{}]), timeout=10)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        blocking.gate.set()
        t.join(20)
    assert results["first"].partial_success.rejected_spans == 0
    store.close()

"""Bearer tokens (§11): ingest vs query scopes, 401 vs 403, /healthz open, gRPC too; bind refusal."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
from collector_helpers import RunningCollector, request_with
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

from reach_collector.api.auth import check, scope_for
from reach_collector.api.otlp_grpc import start_grpc
from reach_collector.config import Settings, check_bind

PB = {"content-type": "application/x-protobuf"}


def _bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


@pytest.fixture
def secured(start_collector: Callable[..., RunningCollector], tmp_path: Path) -> RunningCollector:
    return start_collector(
        Settings(db=str(tmp_path / "a.duckdb"), ingest_token="in-secret", query_token="q-secret")
    )


def test_http_scopes(secured: RunningCollector) -> None:
    assert secured.get("/healthz").status_code == 200
    assert secured.post("/v1/traces", content=b"", headers=PB).status_code == 401
    assert secured.post("/v1/traces", content=b"", headers={**PB, **_bearer("wrong")}).status_code == 401
    assert secured.post("/v1/traces", content=b"", headers={**PB, **_bearer("q-secret")}).status_code == 403
    assert secured.post("/v1/traces", content=b"", headers={**PB, **_bearer("in-secret")}).status_code == 200
    response = secured.get("/api/traces")
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert secured.get("/api/traces", headers=_bearer("in-secret")).status_code == 403
    assert secured.get("/api/traces", headers=_bearer("q-secret")).status_code == 200
    assert (
        secured.get("/api/traces/" + "ab" * 16, headers={"authorization": "Basic q-secret"}).status_code
        == 401
    )
    assert secured.get("/openapi.json").status_code == 401


def test_grpc_scopes(secured: RunningCollector) -> None:
    server, port = start_grpc(
        secured.app.state.ingest, "127.0.0.1", 0, ingest_token="in-secret", query_token="q-secret"
    )
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = trace_service_pb2_grpc.TraceServiceStub(channel)
            for metadata, code in (
                ((), grpc.StatusCode.UNAUTHENTICATED),
                ((("authorization", "Bearer nope"),), grpc.StatusCode.UNAUTHENTICATED),
                ((("authorization", "Bearer q-secret"),), grpc.StatusCode.PERMISSION_DENIED),
            ):
                with pytest.raises(grpc.RpcError) as err:
                    stub.Export(request_with([{}]), metadata=metadata, timeout=10)
                assert err.value.code() == code
            stub.Export(request_with([{}]), metadata=(("authorization", "Bearer in-secret"),), timeout=10)
    finally:
        server.stop(grace=None)


def test_only_one_token_guards_only_its_scope() -> None:
    assert check("/v1/traces", None, ingest="i", query=None) == 401
    assert check("/api/traces", None, ingest="i", query=None) is None
    assert check("/api/traces", "Bearer i", ingest=None, query="q") == 401
    assert scope_for("/api/heartbeats") == "ingest"
    assert scope_for("/metrics") == "query"
    assert scope_for("/healthz") is None


def test_non_loopback_bind_needs_tokens_or_insecure_flag() -> None:
    assert check_bind(Settings(host="127.0.0.1")) is None
    reason = check_bind(Settings(host="0.0.0.0"))
    assert reason and "--insecure-bind" in reason and "0.0.0.0" in reason
    assert check_bind(Settings(host="0.0.0.0", insecure_bind=True)) is None
    assert check_bind(Settings(host="0.0.0.0", ingest_token="a", query_token="b")) is None

"""The gRPC ``LogsService`` refuses what ``TraceService`` refuses, with the same codes and the same
token scope; and an acknowledged evaluation survives a kill -9 of the collector process (a real
``python -m reach_collector`` on a DuckDB file), shown on its span after the restart."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import grpc
import httpx
import pytest
from collector_process import CollectorProcess
from eval_helpers import Served

from reach_collector.config import Settings
from reach_otel import semconv as sc

TRACES = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
LOGS = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"


def _code(
    target: str, method: str, body: bytes, metadata: tuple[tuple[str, str], ...] = ()
) -> grpc.StatusCode:
    with grpc.insecure_channel(target) as channel:
        call = channel.unary_unary(method)  # bytes in, bytes out
        try:
            call(body, metadata=metadata, timeout=10)
        except grpc.RpcError as exc:
            return exc.code()  # type: ignore[no-any-return]
    return grpc.StatusCode.OK


@pytest.mark.parametrize(
    ("what", "body"),
    [("not protobuf", b"\xff\xff\xff\xff"), ("too large", b"\x0a\x80\x40" + b"\x00" * 8192), ("empty", b"")],
)
def test_grpc_logs_answer_as_grpc_traces(start_served: Callable[..., Served], what: str, body: bytes) -> None:
    served = start_served(replace(Settings(), max_body_bytes=4096))
    traces, logs = _code(served.grpc, TRACES, body), _code(served.grpc, LOGS, body)
    assert logs == traces, what
    assert (logs == grpc.StatusCode.OK) is (what == "empty"), (what, logs)
    assert served.rows() == []


def test_grpc_logs_take_the_ingest_token(start_served: Callable[..., Served]) -> None:
    served = start_served(replace(Settings(), ingest_token="in-secret", query_token="q-secret"))
    assert _code(served.grpc, LOGS, b"") == grpc.StatusCode.UNAUTHENTICATED
    query = (("authorization", "Bearer q-secret"),)
    assert _code(served.grpc, LOGS, b"", query) == grpc.StatusCode.PERMISSION_DENIED
    assert _code(served.grpc, LOGS, b"", (("authorization", "Bearer in-secret"),)) == grpc.StatusCode.OK


def _attr(key: str, value: object) -> dict[str, object]:
    typed = {"doubleValue": value} if isinstance(value, float) else {"stringValue": value}
    return {"key": key, "value": typed}


def test_an_acknowledged_evaluation_survives_kill_9(tmp_path: Path) -> None:
    trace_id, span_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    now = time.time_ns()  # within the default retention, which runs as the collector starts
    spans = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": trace_id,
                                "spanId": span_id,
                                "name": "invoke_agent billing",
                                "startTimeUnixNano": str(now),
                                "endTimeUnixNano": str(now + 10**9),
                                "attributes": [
                                    _attr(sc.GEN_AI_OPERATION_NAME, sc.OP_AGENT),
                                    _attr(sc.GEN_AI_AGENT_NAME, "billing"),
                                ],
                            }
                        ]
                    }
                ]
            }
        ]
    }
    logs = {
        "resourceLogs": [
            {
                "scopeLogs": [
                    {
                        "logRecords": [
                            {
                                "timeUnixNano": str(now),  # before the feedback, received later
                                "eventName": sc.GEN_AI_EVALUATION_RESULT,
                                "traceId": trace_id,
                                "spanId": span_id,
                                "attributes": [
                                    _attr(sc.GEN_AI_EVALUATION_NAME, "accuracy"),
                                    _attr(sc.GEN_AI_EVALUATION_SCORE_VALUE, 0.25),
                                    _attr(sc.GEN_AI_EVALUATION_SCORE_LABEL, "wrong"),
                                ],
                            }
                        ]
                    }
                ]
            }
        ]
    }
    db = tmp_path / "traces.duckdb"
    collector = CollectorProcess(db).start()
    try:
        headers = {"content-type": "application/json"}
        assert (
            httpx.post(collector.url + "/v1/traces", content=json.dumps(spans), headers=headers).status_code
            == 200
        )
        assert (
            httpx.post(collector.url + "/v1/logs", content=json.dumps(logs), headers=headers).status_code
            == 200
        )
        feedback = httpx.post(collector.url + "/api/feedback", json={"trace_id": trace_id, "label": "bad"})
        assert feedback.status_code == 202
    finally:
        collector.kill()  # SIGKILL: no shutdown, no checkpoint
    again = CollectorProcess(db).start()
    try:
        trace = again.get(f"/api/traces/{trace_id}")
        (span,) = trace["spans"]
        assert [(e["name"], e["score"], e["label"]) for e in span["evaluations"]] == [
            ("accuracy", 0.25, "wrong"),
            (sc.EVALUATION_USER_FEEDBACK, None, "bad"),
        ]
    finally:
        again.stop()

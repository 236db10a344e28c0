"""``POST /v1/logs`` takes what ``/v1/traces`` takes and refuses what it refuses, with the same
4xx: OTLP JSON with hex ids, gzip; malformed, oversized and wrong-type bodies; the ingest token;
429 with Retry-After when the write queue is full (the evaluation rows count against its bound)."""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Callable
from dataclasses import replace

import httpx
import pytest
from eval_helpers import Served

from reach_collector.config import Settings
from reach_collector.ingest.writer import Writer
from reach_collector.store.duckdb_store import DuckDBStore
from reach_otel import semconv as sc

TRACE = "5b8efff798038103d269b633813fc60c"
SPAN = "eee19b7ec3c1b174"


def _logs_json(*records: dict[str, object]) -> dict[str, object]:
    return {
        "resourceLogs": [
            {
                "resource": {"attributes": [{"key": sc.SERVICE_NAME, "value": {"stringValue": "judge"}}]},
                "scopeLogs": [{"scope": {"name": "t"}, "logRecords": list(records)}],
            }
        ]
    }


def _record(name: str, score: float, trace: str = TRACE, span: str = SPAN) -> dict[str, object]:
    return {
        "timeUnixNano": "1700000000000000000",
        "eventName": sc.GEN_AI_EVALUATION_RESULT,
        "traceId": trace,
        "spanId": span,
        "attributes": [
            {"key": sc.GEN_AI_EVALUATION_NAME, "value": {"stringValue": name}},
            {"key": sc.GEN_AI_EVALUATION_SCORE_VALUE, "value": {"doubleValue": score}},
            {"key": sc.ERROR_TYPE, "value": {"stringValue": "timeout"}},
        ],
    }


def test_otlp_json_with_hex_ids_and_gzip(served: Served) -> None:
    body = json.dumps(_logs_json(_record("relevance", 0.5))).encode()
    plain = served.post("/v1/logs", content=body, headers={"content-type": "application/json"})
    assert plain.status_code == 200, plain.text
    assert plain.json() == {}
    zipped = served.post(
        "/v1/logs",
        content=gzip.compress(json.dumps(_logs_json(_record("accuracy", 0.75))).encode()),
        headers={"content-type": "application/json", "content-encoding": "gzip"},
    )
    assert zipped.status_code == 200, zipped.text
    rows = served.rows()
    assert [(r[0], r[1], r[2], r[4], r[5], r[8], r[9]) for r in rows] == [
        (1_700_000_000_000_000_000, TRACE, SPAN, "accuracy", 0.75, "timeout", "judge"),
        (1_700_000_000_000_000_000, TRACE, SPAN, "relevance", 0.5, "timeout", "judge"),
    ]


def test_partial_success_names_the_records_it_rejects(served: Served) -> None:
    nameless = _record("x", 0.1)
    nameless["attributes"] = []  # type: ignore[index]
    bad_ids = _record("y", 0.2, trace="abcd")
    answer = served.post(
        "/v1/logs",
        json=_logs_json(nameless, bad_ids, _record("kept", 1.0)),
        headers={"content-type": "application/json"},
    )
    assert answer.status_code == 200
    partial = answer.json()["partialSuccess"]
    assert partial["rejectedLogRecords"] == "2"
    assert sc.GEN_AI_EVALUATION_NAME in partial["errorMessage"] and "trace_id" in partial["errorMessage"]
    assert [r[4] for r in served.rows()] == ["kept"]


BAD_BODIES: list[tuple[str, bytes, dict[str, str]]] = [
    ("not protobuf", b"\xff\xff\xff\xff", {"content-type": "application/x-protobuf"}),
    ("not json", b"{nope", {"content-type": "application/json"}),
    ("json array", b"[]", {"content-type": "application/json"}),
    ("bad gzip", b"\x1f\x8bnot gzip", {"content-type": "application/x-protobuf", "content-encoding": "gzip"}),
    ("wrong type", b"hello", {"content-type": "text/plain"}),
    ("unknown encoding", b"x", {"content-type": "application/x-protobuf", "content-encoding": "br"}),
    ("too large", b"\x00" * 5000, {"content-type": "application/x-protobuf"}),
    (
        "gzip bomb",
        gzip.compress(b"\x00" * 100_000),
        {"content-type": "application/x-protobuf", "content-encoding": "gzip"},
    ),
]


@pytest.mark.parametrize(("what", "body", "headers"), BAD_BODIES, ids=[b[0] for b in BAD_BODIES])
def test_bad_bodies_get_the_same_answer_as_traces(
    start_served: Callable[..., Served], what: str, body: bytes, headers: dict[str, str]
) -> None:
    served = start_served(replace(Settings(), max_body_bytes=4096))
    traces = served.post("/v1/traces", content=body, headers=headers)
    logs = served.post("/v1/logs", content=body, headers=headers)
    assert 400 <= logs.status_code < 500, what
    assert logs.status_code == traces.status_code, (what, logs.text, traces.text)
    assert served.rows() == []


def test_the_ingest_token_guards_logs_and_feedback(start_served: Callable[..., Served]) -> None:
    served = start_served(replace(Settings(), ingest_token="in-secret", query_token="q-secret"))
    body = json.dumps(_logs_json(_record("relevance", 0.5))).encode()
    json_type = {"content-type": "application/json"}
    assert served.post("/v1/logs", content=body, headers=json_type).status_code == 401
    query = {**json_type, "authorization": "Bearer q-secret"}
    assert served.post("/v1/logs", content=body, headers=query).status_code == 403
    assert (
        served.post("/api/feedback", json={"trace_id": TRACE, "score": 1}, headers=query).status_code == 403
    )
    ingest = {**json_type, "authorization": "Bearer in-secret"}
    assert served.post("/v1/logs", content=body, headers=ingest).status_code == 200
    assert (
        served.post("/api/feedback", json={"trace_id": TRACE, "score": 1}, headers=ingest).status_code == 202
    )
    assert len(served.rows()) == 2


def test_a_full_write_queue_answers_429_with_retry_after(
    start_served: Callable[..., Served], tmp_path
) -> None:  # type: ignore[no-untyped-def]
    store = DuckDBStore(tmp_path / "queue.duckdb")
    writer = Writer(store, max_pending_spans=2)
    served = start_served(writer=writer)
    release = threading.Event()
    writer.call(lambda _: release.wait(10))  # the writer is busy: what comes next waits in the queue
    first: list[httpx.Response] = []
    body = json.dumps(_logs_json(_record("a", 0.1), _record("b", 0.2))).encode()
    json_type = {"content-type": "application/json"}
    sender = threading.Thread(
        target=lambda: first.append(served.post("/v1/logs", content=body, headers=json_type))
    )
    sender.start()
    try:
        for _ in range(200):
            if writer.pending_spans:
                break
            threading.Event().wait(0.02)
        assert writer.pending_spans == 2
        full = served.post("/v1/logs", content=body, headers=json_type)
        assert full.status_code == 429
        assert full.headers["retry-after"] == "1"
        feedback = served.post("/api/feedback", json={"trace_id": TRACE, "label": "bad"})
        assert feedback.status_code == 429 and feedback.headers["retry-after"] == "1"
    finally:
        release.set()
        sender.join(10)
    assert first[0].status_code == 200
    assert writer.pending_spans == 0
    store.close()


def test_a_request_over_the_row_budget_is_a_413(start_served: Callable[..., Served]) -> None:
    served = start_served(replace(Settings(), max_row_bytes=4096))
    record = _record("verbose", 0.5)
    record["attributes"].append(  # type: ignore[union-attr]
        {"key": sc.GEN_AI_EVALUATION_EXPLANATION, "value": {"stringValue": "why " * 500}}
    )
    answer = served.post(
        "/v1/logs", json=_logs_json(record, record), headers={"content-type": "application/json"}
    )
    assert answer.status_code == 413
    assert "server.max_row_bytes" in answer.json()["message"]
    small = served.post(
        "/v1/logs", json=_logs_json(_record("terse", 0.5)), headers={"content-type": "application/json"}
    )
    assert small.status_code == 200
    assert [r[4] for r in served.rows()] == ["terse"]

"""OTLP/JSON ingest: hex ids, integer enums, 64-bit integers as strings or numbers; JSON replies."""

from __future__ import annotations

import gzip
import json
from typing import Any

from collector_helpers import RunningCollector

TRACE = "5b8efff798038103d269b633813fc60c"
ROOT = "eee19b7ec3c1b174"
CHILD = "eee19b7ec3c1b173"


def otlp_json(spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [
                        {"key": "service.name", "value": {"stringValue": "json-svc"}},
                        {"key": "host.cores", "value": {"intValue": "2"}},
                    ]
                },
                "scopeSpans": [{"scope": {"name": "json-test", "version": "0.1"}, "spans": spans}],
            }
        ]
    }


def span(span_id: str, parent: str = "", **extra: Any) -> dict[str, Any]:
    body = {
        "traceId": TRACE,
        "spanId": span_id,
        "parentSpanId": parent,
        "name": f"span-{span_id}",
        "kind": 2,
        "startTimeUnixNano": "1700000000000000001",
        "endTimeUnixNano": 1700000000250000002,
        "status": {"code": 2, "message": "boom"},
    }
    body.update(extra)
    return body


def test_json_roundtrip(collector: RunningCollector) -> None:
    attrs = [
        {"key": "s", "value": {"stringValue": "x"}},
        {"key": "i", "value": {"intValue": "9007199254740993"}},
        {"key": "n", "value": {"intValue": 12}},
        {"key": "d", "value": {"doubleValue": 2.5}},
        {"key": "b", "value": {"boolValue": True}},
        {"key": "arr", "value": {"arrayValue": {"values": [{"intValue": "1"}, {"stringValue": "two"}]}}},
        {
            "key": "kv",
            "value": {"kvlistValue": {"values": [{"key": "inner", "value": {"boolValue": False}}]}},
        },
        {"key": "raw", "value": {"bytesValue": "AAEC"}},
    ]
    payload = otlp_json(
        [
            span(ROOT, attributes=attrs, events=[{"timeUnixNano": "1700000000100000000", "name": "e"}]),
            span(
                CHILD,
                ROOT,
                kind=3,
                status={},
                links=[{"traceId": TRACE, "spanId": ROOT, "attributes": []}],
            ),
        ]
    )
    response = collector.post("/v1/traces", json=payload)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == {}
    body = collector.get(f"/api/traces/{TRACE}").json()
    root, child = body["spans"] if body["spans"][0]["span_id"] == ROOT else body["spans"][::-1]
    assert root["parent_span_id"] is None
    assert root["kind"] == "SERVER" and child["kind"] == "CLIENT"
    assert root["start_time_unix_nano"] == 1700000000000000001
    assert root["end_time_unix_nano"] == 1700000000250000002
    assert root["status"] == {"code": "ERROR", "message": "boom"}
    assert child["status"] == {"code": "UNSET", "message": ""}
    assert root["attributes"] == {
        "s": "x",
        "i": 9007199254740993,
        "n": 12,
        "d": 2.5,
        "b": True,
        "arr": [1, "two"],
        "kv": {"inner": False},
        "raw": "AAEC",
    }
    assert root["events"] == [{"name": "e", "time_unix_nano": 1700000000100000000, "attributes": {}}]
    assert child["links"][0]["trace_id"] == TRACE and child["links"][0]["span_id"] == ROOT
    assert root["resource"] == {"service.name": "json-svc", "host.cores": 2}
    assert root["service"] == "json-svc"
    assert body["roots"][0]["children"][0]["span_id"] == CHILD


def test_json_gzip(collector: RunningCollector) -> None:
    data = gzip.compress(json.dumps(otlp_json([span(ROOT)])).encode())
    response = collector.post(
        "/v1/traces",
        content=data,
        headers={"content-type": "application/json", "content-encoding": "gzip"},
    )
    assert response.status_code == 200
    assert collector.get(f"/api/traces/{TRACE}").json()["span_count"] == 1


def test_json_partial_success_keeps_valid_spans(collector: RunningCollector) -> None:
    payload = otlp_json(
        [
            span(ROOT),
            span("zz" * 8),  # not hex
            span("00" * 8),  # all-zero id
            span(CHILD, traceId="abc"),  # wrong length
        ]
    )
    response = collector.post("/v1/traces", json=payload)
    assert response.status_code == 200
    partial = response.json()["partialSuccess"]
    assert int(partial["rejectedSpans"]) == 3
    assert "span_id" in partial["errorMessage"] and "trace_id" in partial["errorMessage"]
    assert collector.get(f"/api/traces/{TRACE}").json()["span_count"] == 1


def test_json_wrong_types_are_400(collector: RunningCollector) -> None:
    for payload in (
        [],
        {"resourceSpans": "nope"},
        {"resourceSpans": [{"scopeSpans": [{"spans": [{"name": 5, "kind": "WEIRD"}]}]}]},
        {"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": "-1"}]}]}]},
    ):
        response = collector.post("/v1/traces", json=payload)
        assert response.status_code == 400, payload
        assert response.json()["message"]

"""A corpus of hostile bodies and query strings: only 4xx or 200, never a 5xx, and a live server."""

from __future__ import annotations

import gzip
import json
import os
import random
from typing import Any

import pytest
from collector_helpers import RunningCollector
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

PB = {"content-type": "application/x-protobuf"}
JS = {"content-type": "application/json"}


def _valid_request(attrs: int = 3) -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    kv = rs.resource.attributes.add()
    kv.key, kv.value.string_value = "service.name", "svc"
    span = rs.scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = os.urandom(15) + b"\x01", os.urandom(7) + b"\x01", "s"
    span.start_time_unix_nano, span.end_time_unix_nano = 1_700_000_000_000_000_000, 1_700_000_000_000_000_900
    for i in range(attrs):
        a = span.attributes.add()
        a.key, a.value.int_value = f"k{i}", i
    return req


def _nested_kvlist(depth: int) -> ExportTraceServiceRequest:
    req = _valid_request(0)
    value = req.resource_spans[0].scope_spans[0].spans[0].attributes.add()
    value.key = "deep"
    v = value.value
    for _ in range(depth):
        inner = v.kvlist_value.values.add()
        inner.key = "x"
        v = inner.value
    v.string_value = "bottom"
    return req


def _corpus() -> list[tuple[str, bytes, dict[str, str]]]:
    rng = random.Random(3)
    valid = _valid_request().SerializeToString()
    huge = _valid_request(0)
    big = huge.resource_spans[0].scope_spans[0].spans[0].attributes.add()
    big.key, big.value.string_value = "huge", "x" * 3_000_000
    wide = _valid_request(10_000)
    wrong_types = {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 5, "spanId": [], "name": {}}]}]}]}
    return [
        ("empty protobuf", b"", PB),
        ("empty json", b"", JS),
        ("random bytes", bytes(rng.getrandbits(8) for _ in range(4096)), PB),
        ("random json bytes", bytes(rng.getrandbits(8) for _ in range(512)), JS),
        ("truncated protobuf", valid[: len(valid) // 2], PB),
        ("truncated protobuf 2", valid[:-3], PB),
        ("json null", b"null", JS),
        ("json string", b'"x"', JS),
        ("json number", b"1e999", JS),
        ("json wrong types", json.dumps(wrong_types).encode(), JS),
        ("json deep nesting", b"[" * 100_000 + b"]" * 100_000, JS),
        ("json deep objects", b'{"a":' * 5000 + b"1" + b"}" * 5000, JS),
        (
            "json huge int",
            b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"startTimeUnixNano":"1' + b"0" * 40 + b'"}]}]}]}',
            JS,
        ),
        ("json lone surrogate", b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"\\ud800"}]}]}]}', JS),
        (
            "json nan attribute",
            b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"'
            + b"ab" * 16
            + b'","spanId":"'
            + b"cd" * 8
            + b'","attributes":[{"key":"n","value":{"doubleValue":"NaN"}}]}]}]}]}',
            JS,
        ),
        ("huge attribute value", huge.SerializeToString(), PB),
        ("10k attributes", wide.SerializeToString(), PB),
        ("nested kvlist", _nested_kvlist(40).SerializeToString(), PB),
        ("too deeply nested kvlist", _nested_kvlist(300).SerializeToString(), PB),
        ("gzip bomb", gzip.compress(b"\0" * 64_000_000), {**PB, "content-encoding": "gzip"}),
        ("not gzip", valid, {**PB, "content-encoding": "gzip"}),
        ("truncated gzip", gzip.compress(valid)[:-10], {**PB, "content-encoding": "gzip"}),
        ("gzip with trailing junk", gzip.compress(valid) + b"junk", {**PB, "content-encoding": "gzip"}),
        ("invalid utf-8 string", b"\x0a\x0b\x12\x09\x12\x07\x2a\x05\xff\xfe\xfd\xfc\xfb", PB),
        ("protobuf as json", valid, JS),
        ("json as protobuf", b'{"resourceSpans": []}', PB),
    ]


@pytest.mark.parametrize("name,body,headers", _corpus(), ids=lambda v: v if isinstance(v, str) else "")
def test_corpus_gets_4xx_or_200(
    collector: RunningCollector, name: str, body: bytes, headers: dict[str, str]
) -> None:
    response = collector.post("/v1/traces", content=body, headers=headers)
    assert response.status_code < 500, f"{name}: {response.status_code} {response.text[:200]}"
    assert response.status_code in (200, 400, 413, 415), name
    assert collector.get("/healthz").status_code == 200


@pytest.mark.parametrize(
    "query",
    [
        "/api/traces?agent=' OR 1=1 --",
        "/api/traces?service=%00%ff",
        "/api/traces?attr.x'%3B DROP TABLE spans%3B--=1",
        "/api/traces?attr.$..*=1",
        "/api/traces?since=99999999999999999999999",
        "/api/traces?since=9999999999d",
        "/api/traces?until=9999-12-31T23:59:59Z",
        "/api/traces?limit=-5",
        "/api/traces?limit=99999999999999999999999999",
        "/api/traces?min_duration_ms=1e308",
        "/api/traces?min_duration_ms=-inf",
        "/api/traces/" + "A" * 10_000,
        "/api/traces/%27%3B%20DROP%20TABLE%20spans",
    ],
)
def test_hostile_queries_get_4xx_or_200(collector: RunningCollector, query: str) -> None:
    response = collector.get(query)
    ok = (200, 400, 404, 414)  # 414: a path over the request-line cap (api/limits.py)
    assert response.status_code in ok, f"{query}: {response.status_code} {response.text[:200]}"
    assert collector.get("/healthz").status_code == 200
    assert collector.store.count_spans() == 0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=2048), media=st.sampled_from(["application/x-protobuf", "application/json"]))
def test_fuzzed_bodies_never_5xx(collector: RunningCollector, data: bytes, media: str) -> None:
    response = collector.post("/v1/traces", content=data, headers={"content-type": media})
    assert response.status_code in (200, 400), response.text[:200]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_mutations_of_a_valid_request_never_5xx(collector: RunningCollector, data: Any) -> None:
    body = bytearray(_valid_request().SerializeToString())
    for _ in range(data.draw(st.integers(1, 8))):
        i = data.draw(st.integers(0, len(body) - 1))
        body[i] = data.draw(st.integers(0, 255))
    response = collector.post("/v1/traces", content=bytes(body), headers=PB)
    assert response.status_code in (200, 400), response.text[:200]

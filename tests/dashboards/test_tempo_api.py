"""The Tempo-compatible API: a stored trace comes back as OTLP (JSON and protobuf) equal to what
the SDK exported; echo, search, tags and tag values answer in Tempo's shapes."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from collector_helpers import multi_agent_trace, produce_rich_trace
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, TracesData


def _get(collector: Any, path: str, **kwargs: Any) -> httpx.Response:
    return httpx.get(collector.url + path, timeout=10, **kwargs)


def _value(v: AnyValue) -> Any:
    which = v.WhichOneof("value")
    if which == "array_value":
        return [_value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, which) if which else None


def _attrs(kvs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in kvs}


def _expected(attributes: Any) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dict(attributes or {}).items()}


def _assert_same(got: dict[str, Any], want: dict[str, Any], where: str) -> None:
    assert got == want, where
    for key, value in want.items():  # 1 == 1.0 == True in Python: compare the types too
        assert type(got[key]) is type(value), f"{where}.{key}"


def _spans(data: TracesData) -> dict[bytes, tuple[Any, Any, Span]]:
    out = {}
    for rs in data.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                out[span.span_id] = (rs, ss, span)
    return out


def _assert_equals_sdk(data: TracesData, trace_id: int, sdk_spans: list[Any]) -> None:
    by_id = _spans(data)
    assert len(by_id) == len(sdk_spans)
    for sdk in sdk_spans:
        ctx = sdk.get_span_context()
        rs, ss, span = by_id[ctx.span_id.to_bytes(8, "big")]
        where = sdk.name
        assert span.trace_id == trace_id.to_bytes(16, "big")
        assert span.parent_span_id == (sdk.parent.span_id.to_bytes(8, "big") if sdk.parent else b"")
        assert span.name == sdk.name
        assert span.kind == sdk.kind.value + 1  # OTLP counts UNSPECIFIED as 0
        assert (span.start_time_unix_nano, span.end_time_unix_nano) == (sdk.start_time, sdk.end_time)
        assert span.status.code == sdk.status.status_code.value
        assert span.status.message == (sdk.status.description or "")
        _assert_same(_attrs(span.attributes), _expected(sdk.attributes), where)
        _assert_same(_attrs(rs.resource.attributes), _expected(sdk.resource.attributes), where + ".resource")
        assert (ss.scope.name, ss.scope.version) == (sdk.instrumentation_scope.name, "1.2.3")
        assert [(e.name, e.time_unix_nano) for e in span.events] == [
            (e.name, e.timestamp) for e in sdk.events
        ]
        for got, want in zip(span.events, sdk.events, strict=True):
            _assert_same(_attrs(got.attributes), _expected(want.attributes), where + ".event")
        assert [(ln.trace_id, ln.span_id) for ln in span.links] == [
            (ln.context.trace_id.to_bytes(16, "big"), ln.context.span_id.to_bytes(8, "big"))
            for ln in sdk.links
        ]
        for got, want in zip(span.links, sdk.links, strict=True):
            _assert_same(_attrs(got.attributes), _expected(want.attributes), where + ".link")


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = data[pos]
        result |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            return result, pos
        shift += 7


@pytest.fixture
def rich(start_collector: Callable[..., Any]) -> tuple[Any, int, list[Any]]:
    collector = start_collector()
    trace_id, sdk_spans = produce_rich_trace(OTLPSpanExporter(endpoint=collector.url + "/v1/traces"))
    return collector, trace_id, sdk_spans


def test_trace_json_decodes_as_otlp_and_equals_the_exported_trace(rich: tuple[Any, int, list[Any]]) -> None:
    collector, trace_id, sdk_spans = rich
    hex_id = format(trace_id, "032x")
    response = _get(collector, f"/tempo/api/traces/{hex_id}")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    data = json_format.Parse(response.text, TracesData())
    _assert_equals_sdk(data, trace_id, sdk_spans)
    # Ids are base64 in the JSON, as Tempo writes them (protobuf's mapping of bytes).
    first = response.json()["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert base64.b64decode(first["traceId"]).hex() == hex_id
    # …and the same spans as the collector's own trace view.
    own = _get(collector, f"/api/traces/{hex_id}").json()
    assert {bytes.fromhex(s["span_id"]) for s in own["spans"]} == set(_spans(data))


def test_trace_protobuf_v1_and_v2(rich: tuple[Any, int, list[Any]]) -> None:
    collector, trace_id, sdk_spans = rich
    hex_id = format(trace_id, "032x")
    accept = {"accept": "application/protobuf"}
    v1 = _get(collector, f"/tempo/api/traces/{hex_id}", headers=accept)
    assert v1.headers["content-type"] == "application/protobuf"
    data = TracesData.FromString(v1.content)
    _assert_equals_sdk(data, trace_id, sdk_spans)
    # v2: TraceByIDResponse { Trace trace = 1; } around the same bytes.
    v2 = _get(collector, f"/tempo/api/v2/traces/{hex_id}", headers=accept).content
    assert v2[0] == 0x0A
    length, start = _varint(v2, 1)
    assert v2[start : start + length] == v1.content and start + length == len(v2)
    v2_json = _get(collector, f"/tempo/api/v2/traces/{hex_id}").json()
    assert json_format.ParseDict(v2_json["trace"], TracesData()) == data


def test_trace_ids_errors_and_echo(start_collector: Callable[..., Any]) -> None:
    collector = start_collector()
    assert _get(collector, "/tempo/api/echo").text == "echo"
    assert _get(collector, "/tempo/api/traces/" + "ab" * 16).status_code == 404
    assert _get(collector, "/tempo/api/v2/traces/" + "ab" * 16).status_code == 404
    for bad in ("xyz", "0" * 32, "a" * 33):
        assert _get(collector, f"/tempo/api/traces/{bad}").status_code == 400, bad
    # Short ids are left-padded, as Tempo does.
    trace_id = multi_agent_trace(OTLPSpanExporter(endpoint=collector.url + "/v1/traces"))
    assert _get(collector, f"/tempo/api/traces/{trace_id.lstrip('0')}").status_code == 200


def test_search_by_tags_traceql_and_duration(start_collector: Callable[..., Any]) -> None:
    collector = start_collector()
    ok = multi_agent_trace(OTLPSpanExporter(endpoint=collector.url + "/v1/traces"))
    failed = multi_agent_trace(OTLPSpanExporter(endpoint=collector.url + "/v1/traces"), fail_billing=True)

    def ids(**params: Any) -> set[str]:
        response = _get(collector, "/tempo/api/search", params=params)
        assert response.status_code == 200, response.text
        return {t["traceID"] for t in response.json()["traces"]}

    assert ids() == {ok, failed}
    assert ids(tags="service.name=support-app gen_ai.agent.name=BillingAgent") == {ok, failed}
    assert ids(tags="status=error") == {failed}
    assert ids(tags="service.name=nobody") == set()
    assert ids(q='{ resource.service.name = "support-app" && status = error }') == {failed}
    assert ids(q='{ span.gen_ai.tool.name = "query_invoice" }') == {ok, failed}
    assert ids(q="{}", limit=1) in ({ok}, {failed})
    assert ids(minDuration="1h") == set()
    assert ids(maxDuration="1h") == {ok, failed}
    hit = _get(collector, "/tempo/api/search").json()["traces"][0]
    assert set(hit) >= {"traceID", "rootServiceName", "rootTraceName", "startTimeUnixNano", "durationMs"}
    assert hit["rootServiceName"] == "support-app" and hit["rootTraceName"] == "invoke_workflow support_turn"
    for params in ({"minDuration": "soon"}, {"q": '{ name =~ "x" }'}, {"q": "nope"}, {"limit": "x"}):
        assert _get(collector, "/tempo/api/search", params=params).status_code == 400, params


def test_tag_names_and_values(start_collector: Callable[..., Any]) -> None:
    collector = start_collector()
    multi_agent_trace(OTLPSpanExporter(endpoint=collector.url + "/v1/traces"))
    names = _get(collector, "/tempo/api/search/tags").json()["tagNames"]
    assert {"service.name", "gen_ai.agent.name", "gen_ai.operation.name"} <= set(names)
    scopes = {s["name"]: s["tags"] for s in _get(collector, "/tempo/api/v2/search/tags").json()["scopes"]}
    assert "service.name" in scopes["resource"] and "gen_ai.agent.name" in scopes["span"]
    assert "status" in scopes["intrinsic"]
    values = _get(collector, "/tempo/api/search/tag/gen_ai.agent.name/values").json()["tagValues"]
    assert {"TriageAgent", "BillingAgent"} <= set(values)
    v2 = _get(collector, "/tempo/api/v2/search/tag/span.reach.hop.count/values").json()["tagValues"]
    assert {"type": "int", "value": "1"} in v2
    v2 = _get(collector, "/tempo/api/v2/search/tag/resource.service.name/values").json()["tagValues"]
    assert v2 == [{"type": "string", "value": "support-app"}]
    assert (
        _get(collector, "/tempo/api/v2/search/tag/status/values").json()["tagValues"][0]["type"] == "keyword"
    )
    assert _get(collector, "/tempo/api/v2/search/tag/bogus/values").status_code == 400


def test_query_token_guards_the_tempo_api(start_collector: Callable[..., Any]) -> None:
    collector = start_collector(query_token="q-secret", ingest_token="i-secret")
    assert _get(collector, "/tempo/api/echo").status_code == 401
    assert _get(collector, "/tempo/api/echo", headers={"authorization": "Bearer i-secret"}).status_code == 403
    assert _get(collector, "/tempo/api/echo", headers={"authorization": "Bearer q-secret"}).text == "echo"

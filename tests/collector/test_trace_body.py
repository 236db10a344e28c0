"""`GET /api/traces/{id}` of a large trace is encoded a column at a time (views.trace_body,
trace_columns) and says what the dict-per-span shaping (views.trace_json + views.dumps, the
reference, still used for small traces) says of the same stored rows: same keys in the same order,
same values and number types, for a trace with every kind of field, over real OTLP/HTTP into a real
DuckDB file, with and without the nested tree, on both paths."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from servers import ServerThread

from reach_collector.app import create_app
from reach_collector.config import Settings
from reach_collector.ingest.rows import flatten
from reach_collector.query.views import dumps, trace_body, trace_json
from reach_collector.store import span_rows
from reach_collector.store.duckdb_store import DuckDBStore
from reach_collector.store.schema import SPAN_NAMES
from reach_collector.store.span_rows import SpanRows
from reach_otel import semconv as sc

T0 = 1_700_000_000_123_456_789
HTML = "<img src=x onerror=alert(1)>"
# Stored JSON text that Python's reader takes and orjson (and JSON.parse) refuses: what a lenient
# writer would have left in the attributes, events, links or resource columns.
NAN_TEXT = '{"ratio":NaN,"top":Infinity,"bottom":-Infinity,"huge":1E+400,"label":"NaN but a string","n":1}'
BIG_TEXT = '{"big":123456789012345678901234567890,"small":-99999999999999999999,"n":2.5}'
BOTH_TEXT = '{"big":18446744073709551616,"nan":NaN,"nested":{"x":[NaN,1]}}'


def _id(trace: int, span: int = 0) -> tuple[bytes, bytes]:
    return trace.to_bytes(16, "big"), span.to_bytes(8, "big")


def _set(kv: Any, key: str, value: Any) -> None:
    """An OTLP attribute of any value type (lists become arrays, dicts kvlists, bytes bytes)."""
    item: KeyValue = kv.add()
    item.key = key
    _value(item.value, value)


def _value(v: AnyValue, value: Any) -> None:
    if isinstance(value, bool):
        v.bool_value = value
    elif isinstance(value, int):
        v.int_value = value
    elif isinstance(value, float):
        v.double_value = value
    elif isinstance(value, bytes):
        v.bytes_value = value
    elif isinstance(value, list):
        for x in value:
            _value(v.array_value.values.add(), x)
    elif isinstance(value, dict):
        for k, x in value.items():
            _set(v.kvlist_value.values, k, x)
    else:
        v.string_value = value


def every_field_request(trace: int) -> ExportTraceServiceRequest:
    """One trace: a workflow, two agents and a handoff between them (one recorded outcome, one to
    infer), an LLM call, a tool, a failing span, every span kind, attributes of every value type,
    events, links, HTML, quotes, control characters and non-ASCII text in names and messages."""
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    for key, value in {
        sc.SERVICE_NAME: "support <desk>",
        "host.cores": 2,
        "deployment.ratio": 0.25,
        "feature.flags": ["a", 'b"c'],
        "debug": False,
    }.items():
        _set(rs.resource.attributes, key, value)
    scope = rs.scope_spans.add()
    scope.scope.name, scope.scope.version = "reach-otel.tests ✓", "1.2.3"

    def span(n: int, name: str, parent: int | None, start: int, end: int, **extra: Any) -> Any:
        s = scope.spans.add()
        s.trace_id, s.span_id = _id(trace, n)
        if parent is not None:
            s.parent_span_id = _id(trace, parent)[1]
        s.name, s.start_time_unix_nano, s.end_time_unix_nano = name, T0 + start, T0 + end
        s.kind = extra.pop("kind", 1)
        for key, value in extra.pop("attrs", {}).items():
            _set(s.attributes, key, value)
        for key, value in extra.items():
            setattr(s, key, value)
        return s

    span(
        1,
        sc.workflow_span_name("turn"),
        None,
        0,
        9_000_000_000,
        attrs={sc.GEN_AI_OPERATION_NAME: sc.OP_WORKFLOW},
    )
    span(
        2,
        sc.agent_span_name("Triage"),
        1,
        1_000,
        5_000_000_000,
        kind=2,
        attrs={sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT, sc.GEN_AI_AGENT_NAME: "Triage", sc.REACH_HOP_COUNT: 0},
    )
    for n, status, start in ((3, "committed", 2_000_000), (4, None, 3_000_000)):
        attrs: dict[str, Any] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_HANDOFF,
            sc.GEN_AI_AGENT_NAME: "Triage",
            sc.REACH_HANDOFF_SOURCE: "Triage",
            sc.REACH_HANDOFF_TARGET: "Billing",
            sc.REACH_HANDOFF_MODE: "delegate",
            sc.REACH_HOP_COUNT: 1,
        }
        if status is not None:
            attrs[sc.REACH_HANDOFF_STATUS] = status
        span(n, sc.handoff_span_name("Billing"), 2, start, start + 1_000_000, attrs=attrs)
    billing = span(
        5,
        sc.agent_span_name("Billing"),
        4,
        4_000_000,
        4_000_000_000,
        attrs={sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT, sc.GEN_AI_AGENT_NAME: "Billing"},
    )
    billing.status.code, billing.status.message = 2, 'invoice "A-1" failed\nretry: ✗ \x01 \\ done'
    chat = span(
        6,
        sc.llm_span_name("m"),
        5,
        5_000_000,
        1_005_000_000,
        kind=3,
        trace_state="vendor=a,other=b",
        attrs={
            sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
            sc.GEN_AI_REQUEST_MODEL: "m",
            sc.GEN_AI_USAGE_INPUT_TOKENS: 2**63 - 1,
            sc.GEN_AI_USAGE_OUTPUT_TOKENS: -7,
            "temperature": 0.1,
            "whole.double": 100.0,
            "tiny": 1e-300,
            "huge.double": 1.7976931348623157e308,
            "not.a.number": float("nan"),
            "infinite": float("inf"),
            "flags": [True, False],
            "ints": [1, -2, 2**62],
            "doubles": [0.5, -0.0],
            "mixed": ["x", 1, 2.5, True],
            "empty.list": [],
            "blob": b"\x00\xffbytes",
            "map": {"inner": {"deep": [1, "two"]}, "flag": True},
            sc.GEN_AI_INPUT_MESSAGES: json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": HTML}]}]
            ),
            "unicode": "naïve – 日本語 \u2028 line sep 🎉",
            'quote"key\\': 'value with "quotes" and \\ back\tslash',
        },
    )
    chat.flags = 0x301
    event = chat.events.add()
    event.name, event.time_unix_nano = "gen_ai.choice", T0 + 6_000_000
    _set(event.attributes, "index", 0)
    _set(event.attributes, "text", HTML)
    bare = chat.events.add()
    bare.name, bare.time_unix_nano = "no attributes", T0 + 7_000_000
    link = chat.links.add()
    link.trace_id, link.span_id = _id(trace + 1, 9)
    link.trace_state = "k=v"
    _set(link.attributes, "link.kind", "follows <from>")
    span(7, HTML, 5, 1_100_000_000, 1_100_000_000, kind=4, attrs={sc.GEN_AI_OPERATION_NAME: sc.OP_TOOL})
    span(8, 'consumer "quoted" name', 1, 6_000_000_000, 7_000_000_001, kind=5)
    span(9, "unspecified kind, no attributes", 1, 7_000_000_000, 8_000_000_000, kind=0)
    span(10, "orphan: its parent was never sent", 99, 8_000_000_000, 8_500_000_000)
    # The same span twice in one request, as an exporter retry would send it: one stands.
    span(11, "retried", 1, 8_600_000_000, 8_700_000_000)
    span(11, "retried", 1, 8_600_000_000, 8_700_000_000)
    return req


def lenient_rows(trace: int) -> Any:
    """Rows whose stored JSON text a lenient writer produced (NaN, Infinity, integers beyond 64
    bits), in every JSON column, with the trace's lookup parts."""
    batch = flatten(every_field_request(trace))
    table = batch.table
    n = table.num_rows
    texts = [NAN_TEXT, BIG_TEXT, BOTH_TEXT]
    replaced = {
        "attributes": [texts[i % 3] for i in range(n)],
        "resource": [texts[(i + 1) % 3] for i in range(n)],
        "events": [
            f'[{{"name":"e","time_unix_nano":{T0},"attributes":{texts[(i + 2) % 3]}}}]' for i in range(n)
        ],
        "links": [None if i % 2 else "" for i in range(n)],  # no links, stored either way
        "scope": [None] * n,
    }
    for name, values in replaced.items():
        table = table.set_column(SPAN_NAMES.index(name), name, pa.array(values, pa.string()))
    return table, batch.parts


@dataclass
class Running:
    url: str
    store: DuckDBStore


@pytest.fixture(params=["columns", "rows"])
def running(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Running]:
    """A collector over a DuckDB file that already holds the lenient rows of trace 2 (written before
    the server starts: the store has one writer). ``columns``: every trace is read and encoded as
    columns (these are small traces; by default only large ones are); ``rows``: as row dicts."""
    if request.param == "columns":
        monkeypatch.setattr(span_rows, "COLUMNS_FROM", 0)
    db = tmp_path / "traces.duckdb"
    store = DuckDBStore(db)
    table, parts = lenient_rows(2)
    store.write(table, parts)
    server = ServerThread(create_app(Settings(db=str(db), retention_s=0), store=store)).start()
    try:
        yield Running(server.url, store)
    finally:
        server.stop()
        store.close()


def _reference(store: DuckDBStore, trace_id: str, tree: bool) -> bytes:
    """What the collector answered before trace_body: the dict shaping of rows read as tuples."""
    rows = store.query(
        f"SELECT {', '.join(SPAN_NAMES)} FROM spans WHERE trace_id = ? ORDER BY start_ns, span_id", [trace_id]
    )
    return dumps(trace_json(trace_id, [dict(zip(SPAN_NAMES, r, strict=True)) for r in rows], tree=tree))


def _strict(body: bytes) -> Any:
    def refuse(token: str) -> None:
        raise AssertionError(f"{token} is not JSON")

    return json.loads(body, parse_constant=refuse)


def _finite(value: Any) -> Any:
    """The reference with NaN and the infinities as null: how orjson writes them, and how the
    reference did too, except where an integer beyond 64 bits sent the whole response to the
    stdlib encoder, which wrote NaN (not JSON: a browser refused that whole response)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _same(body: bytes, reference: bytes) -> None:
    got, want = _strict(body), _finite(json.loads(reference))
    # json.dumps keeps key order and tells 100 from 100.0: the pin is on order and number types too.
    assert json.dumps(got, ensure_ascii=False) == json.dumps(want, ensure_ascii=False)


def _post(url: str, req: ExportTraceServiceRequest) -> None:
    r = httpx.post(
        url + "/v1/traces",
        content=req.SerializeToString(),
        headers={"content-type": "application/x-protobuf"},
        timeout=10,
    )
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("tree", [False, True])
def test_every_field_over_http_says_what_the_reference_says(running: Running, tree: bool) -> None:
    _post(running.url, every_field_request(1))
    tid = _id(1)[0].hex()
    r = httpx.get(f"{running.url}/api/traces/{tid}", params={"tree": str(tree).lower()}, timeout=10)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/json"
    _same(r.content, _reference(running.store, tid, tree))
    body = _strict(r.content)
    assert ("roots" in body) is tree
    assert body["span_count"] == len(body["spans"]) == 11  # the retried span once
    spans = {s["span_id"]: s for s in body["spans"]}
    # Untrusted text comes back as the same text (the console renders it as text).
    assert spans[_id(1, 7)[1].hex()]["name"] == HTML
    chat = spans[_id(1, 6)[1].hex()]
    assert chat["events"][0]["attributes"]["text"] == HTML
    assert chat["attributes"][sc.GEN_AI_USAGE_INPUT_TOKENS] == 2**63 - 1
    assert chat["attributes"]["whole.double"] == 100.0
    assert isinstance(chat["attributes"]["whole.double"], float)
    assert chat["links"][0]["attributes"] == {"link.kind": "follows <from>"}
    assert chat["trace_state"] == "vendor=a,other=b"
    assert spans[_id(1, 5)[1].hex()]["status"] == {
        "code": "ERROR",
        "message": 'invoice "A-1" failed\nretry: ✗ \x01 \\ done',
    }
    assert spans[_id(1, 3)[1].hex()]["handoff"]["inferred"] is False
    assert spans[_id(1, 4)[1].hex()]["handoff"] == {
        "source": "Triage",
        "target": "Billing",
        "mode": "delegate",
        "status": "failed",  # inferred from Billing's next run, which failed
        "inferred": True,
    }
    assert [s["kind"] for s in body["spans"]].count("INTERNAL") >= 2
    assert {"SERVER", "CLIENT", "PRODUCER", "CONSUMER"} <= {s["kind"] for s in body["spans"]}


@pytest.mark.parametrize("tree", [False, True])
def test_lenient_stored_text_is_json_and_says_what_the_reference_says(running: Running, tree: bool) -> None:
    tid = _id(2)[0].hex()
    r = httpx.get(f"{running.url}/api/traces/{tid}", params={"tree": str(tree).lower()}, timeout=10)
    assert r.status_code == 200, r.text
    _same(r.content, _reference(running.store, tid, tree))
    spans = _strict(r.content)["spans"]
    by_text = {json.dumps(s["attributes"], sort_keys=True) for s in spans}
    assert (
        json.dumps(
            {"ratio": None, "top": None, "bottom": None, "huge": None, "label": "NaN but a string", "n": 1},
            sort_keys=True,
        )
        in by_text
    )
    # Integers beyond 64 bits read as orjson reads them (doubles), as the dict path did.
    big = next(s["attributes"] for s in spans if "small" in s["attributes"])
    assert big == {"big": 1.2345678901234568e29, "small": -1e20, "n": 2.5}
    assert all(isinstance(v, float) for v in big.values())
    # Beside a NaN the stdlib read the integer: it stays whole; the NaN is null.
    both = next(s["attributes"] for s in spans if "nested" in s["attributes"])
    assert both == {"big": 18446744073709551616, "nan": None, "nested": {"x": [None, 1]}}
    assert all(s["links"] == [] and s["scope"] is None for s in spans)


def test_rows_as_dicts_encode_as_rows_as_columns(running: Running) -> None:
    """A store that returns plain row dicts (the protocol allows it) gets the same bytes."""
    _post(running.url, every_field_request(3))
    for trace in (2, 3):
        tid = _id(trace)[0].hex()
        rows = running.store.trace_spans(tid)
        assert rows is not None
        assert isinstance(rows, SpanRows) is (span_rows.COLUMNS_FROM == 0)
        for tree in (False, True):
            assert trace_body(tid, [dict(r) for r in rows], tree=tree) == trace_body(tid, rows, tree=tree)

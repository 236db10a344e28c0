"""The real OTLP exporters send a rich trace; GET /api/traces/{id} returns all of it exactly."""

from __future__ import annotations

from typing import Any

import pytest
from collector_helpers import RunningCollector, tracer_provider
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from reach_otel import semconv as sc

RICH_ATTRIBUTES: dict[str, Any] = {
    "str": "héllo ✓",
    "empty": "",
    "int": 42,
    "negative": -7,
    "big": 2**62 + 11,
    "float": 1.0,
    "pi": 3.141592653589793,
    "bool_t": True,
    "bool_f": False,
    "strs": ("a", "b", ""),
    "ints": (1, -2, 2**40),
    "floats": (0.5, 2.0),
    "bools": (True, False),
    sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT,
    sc.GEN_AI_AGENT_NAME: "BillingAgent",
}


def _produce_trace(exporter: Any) -> tuple[int, list[Any]]:
    provider, memory = tracer_provider(exporter, deployment="test", replicas=3, ratio=0.25)
    tracer = provider.get_tracer("roundtrip", "1.2.3")
    with tracer.start_as_current_span("invoke_workflow support", kind=SpanKind.SERVER) as root:
        with tracer.start_as_current_span("invoke_agent BillingAgent", attributes=RICH_ATTRIBUTES) as agent:
            agent.add_event("checkpoint", {"step": 3, "ok": True, "why": "because", "w": 0.5})
            agent.add_event("bare")
            with tracer.start_as_current_span(
                "chat my-model",
                kind=SpanKind.CLIENT,
                links=[Link(root.get_span_context(), {"link.kind": "root", "n": 1})],
                attributes={
                    sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
                    sc.GEN_AI_REQUEST_MODEL: "my-model",
                    sc.GEN_AI_USAGE_INPUT_TOKENS: 120,
                    sc.GEN_AI_USAGE_OUTPUT_TOKENS: 30,
                },
            ):
                pass
            try:
                with tracer.start_as_current_span("execute_tool query_invoice") as tool:
                    tool.set_attribute(sc.GEN_AI_TOOL_NAME, "query_invoice")
                    raise ValueError("no such invoice")
            except ValueError:
                pass
        with tracer.start_as_current_span("ok-span", kind=SpanKind.PRODUCER) as ok:
            ok.set_status(Status(StatusCode.OK))
        with tracer.start_as_current_span("consumer", kind=SpanKind.CONSUMER):
            pass
    provider.shutdown()
    return root.get_span_context().trace_id, list(memory.get_finished_spans())


def _expected_value(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _assert_same_value(got: Any, want: Any, where: str) -> None:
    want = _expected_value(want)
    assert got == want, where
    assert type(got) is type(want), f"{where}: {type(got).__name__} != {type(want).__name__}"
    if isinstance(want, list):
        for g, w in zip(got, want, strict=True):
            assert type(g) is type(w), where


def _assert_attributes(got: dict[str, Any], want: Any, where: str) -> None:
    want = dict(want or {})
    assert set(got) == set(want), where
    for key, value in want.items():
        _assert_same_value(got[key], value, f"{where}.{key}")


def assert_trace_matches(body: dict[str, Any], trace_id: int, sdk_spans: list[Any]) -> None:
    assert body["trace_id"] == format(trace_id, "032x")
    assert body["span_count"] == len(sdk_spans)
    by_id = {s["span_id"]: s for s in body["spans"]}
    starts = [s["start_time_unix_nano"] for s in body["spans"]]
    assert starts == sorted(starts)
    for sdk in sdk_spans:
        ctx = sdk.get_span_context()
        got = by_id[format(ctx.span_id, "016x")]
        where = sdk.name
        assert got["trace_id"] == format(ctx.trace_id, "032x")
        assert got["parent_span_id"] == (format(sdk.parent.span_id, "016x") if sdk.parent else None)
        assert got["name"] == sdk.name
        assert got["kind"] == sdk.kind.name
        assert got["start_time_unix_nano"] == sdk.start_time
        assert got["end_time_unix_nano"] == sdk.end_time
        assert got["duration_ms"] == pytest.approx((sdk.end_time - sdk.start_time) / 1e6)
        assert got["status"]["code"] == sdk.status.status_code.name
        assert got["status"]["message"] == (sdk.status.description or "")
        assert got["service"] == "billing-agent"
        _assert_attributes(got["attributes"], sdk.attributes, where)
        _assert_attributes(got["resource"], sdk.resource.attributes, where + ".resource")
        assert len(got["events"]) == len(sdk.events)
        for ev_got, ev in zip(got["events"], sdk.events, strict=True):
            assert ev_got["name"] == ev.name
            assert ev_got["time_unix_nano"] == ev.timestamp
            _assert_attributes(ev_got["attributes"], ev.attributes, f"{where}.event")
        assert len(got["links"]) == len(sdk.links)
        for ln_got, ln in zip(got["links"], sdk.links, strict=True):
            assert ln_got["trace_id"] == format(ln.context.trace_id, "032x")
            assert ln_got["span_id"] == format(ln.context.span_id, "016x")
            _assert_attributes(ln_got["attributes"], ln.attributes, f"{where}.link")
    # The tree: one root with the agent and two siblings, ordered by start.
    (root,) = body["roots"]
    assert [c["name"] for c in root["children"]] == ["invoke_agent BillingAgent", "ok-span", "consumer"]
    agent = root["children"][0]
    assert [c["name"] for c in agent["children"]] == ["chat my-model", "execute_tool query_invoice"]


@pytest.mark.parametrize("compression", [Compression.NoCompression, Compression.Gzip])
def test_http_protobuf_roundtrip_is_exact(collector: RunningCollector, compression: Compression) -> None:
    exporter = OTLPSpanExporter(endpoint=collector.url + "/v1/traces", compression=compression)
    trace_id, sdk_spans = _produce_trace(exporter)
    response = collector.get(f"/api/traces/{trace_id:032x}")
    assert response.status_code == 200
    assert_trace_matches(response.json(), trace_id, sdk_spans)


def test_error_span_keeps_status_exception_event_and_error_type(collector: RunningCollector) -> None:
    exporter = OTLPSpanExporter(endpoint=collector.url + "/v1/traces")
    trace_id, _ = _produce_trace(exporter)
    body = collector.get(f"/api/traces/{trace_id:032x}").json()
    (tool,) = [s for s in body["spans"] if s["name"].startswith("execute_tool")]
    assert tool["status"] == {"code": "ERROR", "message": "ValueError: no such invoice"}
    (event,) = tool["events"]
    assert event["name"] == "exception"
    assert event["attributes"]["exception.type"] == "ValueError"
    assert event["attributes"]["exception.message"] == "no such invoice"
    # The promoted columns are filled at ingest (error type from the exception event).
    rows = collector.store.query(
        "SELECT name, operation, agent, tool, model, input_tokens, output_tokens, error_type, status_code "
        "FROM spans ORDER BY start_ns"
    )
    by_name = {r[0]: r[1:] for r in rows}
    assert by_name["execute_tool query_invoice"] == (
        None,
        None,
        "query_invoice",
        None,
        None,
        None,
        "ValueError",
        2,
    )
    assert by_name["chat my-model"] == ("chat", None, None, "my-model", 120, 30, None, 0)
    assert by_name["invoke_agent BillingAgent"][:2] == ("invoke_agent", "BillingAgent")
    summary = collector.get("/api/traces", params={"status": "error"}).json()["traces"]
    assert [t["trace_id"] for t in summary] == [f"{trace_id:032x}"]
    assert summary[0]["error_count"] == 1
    assert summary[0]["agents"] == ["BillingAgent"]
    assert summary[0]["root_name"] == "invoke_workflow support"
    assert summary[0]["span_count"] == 6

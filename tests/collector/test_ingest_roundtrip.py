"""The real OTLP exporters send a rich trace; GET /api/traces/{id} returns all of it exactly."""

from __future__ import annotations

import pytest
from collector_helpers import RunningCollector, assert_trace_matches, produce_rich_trace
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter


@pytest.mark.parametrize("compression", [Compression.NoCompression, Compression.Gzip])
def test_http_protobuf_roundtrip_is_exact(collector: RunningCollector, compression: Compression) -> None:
    exporter = OTLPSpanExporter(endpoint=collector.url + "/v1/traces", compression=compression)
    trace_id, sdk_spans = produce_rich_trace(exporter)
    response = collector.get(f"/api/traces/{trace_id:032x}")
    assert response.status_code == 200
    assert_trace_matches(response.json(), trace_id, sdk_spans)


def test_error_span_keeps_status_exception_event_and_error_type(collector: RunningCollector) -> None:
    exporter = OTLPSpanExporter(endpoint=collector.url + "/v1/traces")
    trace_id, _ = produce_rich_trace(exporter)
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

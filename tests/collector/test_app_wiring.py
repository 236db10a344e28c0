"""create_app wires the exposition to the writer: acknowledged spans are visible in /metrics."""

from __future__ import annotations

from collector_helpers import RunningCollector, multi_agent_trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter


def test_metrics_reflect_acknowledged_spans(collector: RunningCollector) -> None:
    multi_agent_trace(OTLPSpanExporter(endpoint=collector.url + "/v1/traces"), fail_billing=True)
    text = collector.get("/metrics").text
    received = [line for line in text.splitlines() if line.startswith("reach_collector_spans_received_total")]
    assert received and float(received[0].split()[-1]) == 6
    assert 'agent="BillingAgent"' in text
    assert collector.get("/tempo/api/echo").status_code == 200

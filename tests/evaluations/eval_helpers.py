"""Helpers for the evaluation tests: the running collector, and spans and evaluation log records
sent by the OpenTelemetry SDK's own OTLP exporters (never the global providers)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx

from reach_otel import semconv as sc

EVAL_COLUMNS = (
    "time_ns, trace_id, span_id, response_id, name, score, label, explanation, error_type, service, source"
)


@dataclass
class Served:
    url: str
    grpc: str  # host:port of its OTLP/gRPC server
    store: Any
    app: Any

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.get(self.url + path, timeout=10, **kwargs)

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.post(self.url + path, timeout=10, **kwargs)

    def rows(self) -> list[tuple[Any, ...]]:
        return self.store.query(f"SELECT {EVAL_COLUMNS} FROM evaluations ORDER BY time_ns, name")

    def trace(self, trace_id: str) -> dict[str, Any]:
        response = self.get(f"/api/traces/{trace_id}")
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    def evaluations_by_span(self, trace_id: str) -> dict[str, list[dict[str, Any]]]:
        return {s["span_id"]: s.get("evaluations", []) for s in self.trace(trace_id)["spans"]}


def span_exporter(served: Served, protocol: str = "http") -> Any:
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as Grpc

        return Grpc(endpoint=served.grpc, insecure=True)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as Http

    return Http(endpoint=served.url + "/v1/traces")


def log_exporter(served: Served, protocol: str = "http") -> Any:
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as Grpc

        return Grpc(endpoint=served.grpc, insecure=True)
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as Http

    return Http(endpoint=served.url + "/v1/logs")


def tracer(served: Served, protocol: str = "http", service: str = "support-app") -> tuple[Any, Any]:
    """A TracerProvider of our own exporting synchronously to the collector, and a tracer."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({sc.SERVICE_NAME: service}))
    provider.add_span_processor(SimpleSpanProcessor(span_exporter(served, protocol)))
    return provider, provider.get_tracer("evaluation-tests")


def logger(served: Served, protocol: str = "http", service: str = "judge") -> tuple[Any, Any]:
    """A LoggerProvider of our own exporting synchronously to the collector, and a logger."""
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
    from opentelemetry.sdk.resources import Resource

    provider = LoggerProvider(resource=Resource.create({sc.SERVICE_NAME: service}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(log_exporter(served, protocol)))
    return provider, provider.get_logger("evaluation-tests")


def support_trace(tracer: Any, response_id: str = "chatcmpl-1") -> dict[str, str]:
    """workflow → triage agent → billing agent → chat (with a response id); returns span ids by
    role and the trace id."""
    ids: dict[str, str] = {}
    with tracer.start_as_current_span(
        "invoke_workflow support", attributes={sc.GEN_AI_OPERATION_NAME: sc.OP_WORKFLOW}
    ) as root:
        ids["root"] = format(root.get_span_context().span_id, "016x")
        ids["trace"] = format(root.get_span_context().trace_id, "032x")
        agent = {sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT, sc.GEN_AI_AGENT_NAME: "billing"}
        with tracer.start_as_current_span("invoke_agent billing", attributes=agent) as billing:
            ids["agent"] = format(billing.get_span_context().span_id, "016x")
            llm = {
                sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
                sc.GEN_AI_REQUEST_MODEL: "gpt-judge-test",
                sc.GEN_AI_RESPONSE_ID: response_id,
            }
            with tracer.start_as_current_span("chat gpt-judge-test", attributes=llm) as chat:
                ids["chat"] = format(chat.get_span_context().span_id, "016x")
    return ids


def emit_evaluation(
    log: Any,
    name: str | None,
    *,
    trace_id: str | None = None,
    span_id: str | None = None,
    score: float | None = None,
    label: str | None = None,
    explanation: str | None = None,
    response_id: str | None = None,
    event_name: str | None = sc.GEN_AI_EVALUATION_RESULT,
    attribute_event_name: bool = False,
    time_ns: int | None = None,
) -> None:
    """One log record as the GenAI conventions describe the evaluation event, through the SDK."""
    from opentelemetry._logs import LogRecord
    from opentelemetry.trace import TraceFlags

    attrs: dict[str, Any] = {}
    for key, value in (
        (sc.GEN_AI_EVALUATION_NAME, name),
        (sc.GEN_AI_EVALUATION_SCORE_VALUE, score),
        (sc.GEN_AI_EVALUATION_SCORE_LABEL, label),
        (sc.GEN_AI_EVALUATION_EXPLANATION, explanation),
        (sc.GEN_AI_RESPONSE_ID, response_id),
    ):
        if value is not None:
            attrs[key] = value
    if attribute_event_name and event_name:
        attrs[sc.EVENT_NAME] = event_name
    log.emit(
        LogRecord(
            timestamp=time_ns if time_ns is not None else time.time_ns(),
            trace_id=int(trace_id, 16) if trace_id else 0,
            span_id=int(span_id, 16) if span_id else 0,
            trace_flags=TraceFlags(1),
            event_name=None if attribute_event_name else event_name,
            attributes=attrs,
            body="evaluation",
        )
    )

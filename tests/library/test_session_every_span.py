"""The session's ids on every span of a request, not only ours: ``SessionAttributes`` (added by
``init()``) stamps the spans of any instrumentation started under ``reach_otel.session`` or a
LangGraph-style workflow conversation, and leaves an id a span set itself alone."""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from reach_otel import semconv as sc
from reach_otel._session_stamp import SessionAttributes
from reach_otel.handler import TelemetryHandler


def _provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SessionAttributes())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def test_other_instrumentations_spans_carry_the_session_ids() -> None:
    provider, exporter = _provider()
    handler = TelemetryHandler(tracer_provider=provider)
    other = provider.get_tracer("some.http.instrumentation")
    with (
        handler.session(session_id="conv-1", user_id="u-7", task_id="t-2"),
        other.start_as_current_span("GET"),
        other.start_as_current_span("mine", attributes={sc.GEN_AI_CONVERSATION_ID: "own"}),
    ):
        pass
    with other.start_as_current_span("outside"):
        pass
    spans = {s.name: dict(s.attributes or {}) for s in exporter.get_finished_spans()}
    assert spans["GET"][sc.GEN_AI_CONVERSATION_ID] == "conv-1"
    assert spans["GET"][sc.USER_ID] == "u-7" and spans["GET"][sc.REACH_TASK_ID] == "t-2"
    assert spans["mine"][sc.GEN_AI_CONVERSATION_ID] == "own"  # a span's own id stays
    assert sc.GEN_AI_CONVERSATION_ID not in spans["outside"]


def test_a_workflow_conversation_reaches_every_span_under_it_and_a_session_wins() -> None:
    provider, exporter = _provider()
    handler = TelemetryHandler(tracer_provider=provider)
    other = provider.get_tracer("some.db.instrumentation")
    flow = handler.start_workflow("desk", conversation_id="thread-9")
    assert flow is not None
    token = flow.enter()
    with other.start_as_current_span("SELECT"):
        pass
    flow.exit(token)
    flow.stop()
    with handler.session(session_id="conv-1"):
        inner = handler.start_workflow("desk", conversation_id="thread-9")
        assert inner is not None
        inner.stop()
    got = [
        (s.name, (s.attributes or {}).get(sc.GEN_AI_CONVERSATION_ID)) for s in exporter.get_finished_spans()
    ]
    assert got == [
        ("SELECT", "thread-9"),
        ("invoke_workflow desk", "thread-9"),
        ("invoke_workflow desk", "conv-1"),
    ]

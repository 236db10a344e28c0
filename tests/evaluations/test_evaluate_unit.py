"""``reach_otel.evaluate()``/``feedback()`` in process, on a LoggerProvider of the test's own: the
record they emit (event name, attributes, the span it names), and that bad arguments or a broken
provider never reach the caller."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider

import reach_otel
from reach_otel import evaluations
from reach_otel import semconv as sc


@pytest.fixture
def records() -> Iterator[InMemoryLogRecordExporter]:
    memory = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    evaluations.set_logger_provider(provider)
    yield memory
    evaluations.set_logger_provider(None)
    provider.shutdown()


def _emitted(memory: InMemoryLogRecordExporter) -> list[Any]:
    return [r.log_record for r in memory.get_finished_logs()]


def test_the_current_span_is_evaluated(records: InMemoryLogRecordExporter) -> None:
    tracer = TracerProvider().get_tracer("t")
    with tracer.start_as_current_span("chat") as span:
        assert reach_otel.evaluate("relevance", score=1, label="relevant", explanation="on topic") is True
    (record,) = _emitted(records)
    assert record.event_name == sc.GEN_AI_EVALUATION_RESULT
    assert (record.trace_id, record.span_id) == (
        span.get_span_context().trace_id,
        span.get_span_context().span_id,
    )
    assert dict(record.attributes) == {
        sc.GEN_AI_EVALUATION_NAME: "relevance",
        sc.GEN_AI_EVALUATION_SCORE_VALUE: 1.0,
        sc.GEN_AI_EVALUATION_SCORE_LABEL: "relevant",
        sc.GEN_AI_EVALUATION_EXPLANATION: "on topic",
    }


def test_explicit_ids_and_feedback(records: InMemoryLogRecordExporter) -> None:
    assert reach_otel.feedback(label="thumbs_down", comment="wrong", trace_id="ab" * 16) is True
    assert reach_otel.evaluate(
        "faithful", score=0.5, trace_id=5, span_id="00000000000000ff", response_id="r-9"
    )
    first, second = _emitted(records)
    assert (first.trace_id, first.span_id) == (int("ab" * 16, 16), 0)
    assert first.attributes[sc.GEN_AI_EVALUATION_NAME] == sc.EVALUATION_USER_FEEDBACK
    assert first.attributes[sc.GEN_AI_EVALUATION_EXPLANATION] == "wrong"
    assert (second.trace_id, second.span_id) == (5, 255)
    assert second.attributes[sc.GEN_AI_RESPONSE_ID] == "r-9"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"name": ""},
        {"name": 3},
        {"name": "x", "score": float("inf")},
        {"name": "x", "score": True},
        {"name": "x", "label": ""},
        {"name": "x", "trace_id": "not hex"},
        {"name": "x", "trace_id": "0" * 32},
    ],
)
def test_bad_arguments_are_never_raised(records: InMemoryLogRecordExporter, kwargs: dict[str, Any]) -> None:
    name = kwargs.pop("name")
    assert reach_otel.evaluate(name, **kwargs) is False
    assert _emitted(records) == []


def test_a_broken_provider_never_reaches_the_caller() -> None:
    class Broken:
        def get_logger(self, *_: Any, **__: Any) -> Any:
            raise RuntimeError("exporter bug")

    evaluations.set_logger_provider(Broken())
    try:
        assert reach_otel.evaluate("relevance", score=1) is False
        assert reach_otel.feedback(score=1) is False
    finally:
        evaluations.set_logger_provider(None)

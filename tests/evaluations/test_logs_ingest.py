"""OTLP logs ingest of evaluations (SPEC §18): the OpenTelemetry SDK's own log exporters, over
HTTP and gRPC, deliver ``gen_ai.evaluation.result`` records that appear on their spans in
``GET /api/traces/{id}``; other records are counted and dropped, never stored; a record without
an evaluation name is rejected through partial success."""

from __future__ import annotations

import pytest
from eval_helpers import Served, emit_evaluation, logger, support_trace, tracer


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_sdk_log_exporter_delivers_evaluations_onto_their_spans(served: Served, protocol: str) -> None:
    provider, trace_source = tracer(served, protocol)
    ids = support_trace(trace_source)
    log_provider, log = logger(served, protocol)
    emit_evaluation(
        log,
        "relevance",
        trace_id=ids["trace"],
        span_id=ids["chat"],
        score=0.25,
        label="irrelevant",
        explanation="answered about shipping, not billing",
    )
    emit_evaluation(log, "politeness", trace_id=ids["trace"], span_id=ids["agent"], score=1, label="polite")
    # an older SDK's form: the event named by an attribute, not the record's field
    emit_evaluation(
        log, "tone", trace_id=ids["trace"], span_id=ids["agent"], label="ok", attribute_event_name=True
    )
    emit_evaluation(log, None, trace_id=ids["trace"], span_id=ids["chat"], score=0.5)  # no name: rejected
    emit_evaluation(
        log, "ignored", trace_id=ids["trace"], span_id=ids["chat"], event_name=None
    )  # a plain log
    emit_evaluation(log, "other-event", trace_id=ids["trace"], event_name="app.started")
    log_provider.shutdown()
    provider.shutdown()

    by_span = served.evaluations_by_span(ids["trace"])
    chat = by_span[ids["chat"]]
    assert [(e["name"], e["score"], e["label"], e["explanation"]) for e in chat] == [
        ("relevance", 0.25, "irrelevant", "answered about shipping, not billing")
    ]
    assert chat[0]["time"].endswith("Z")
    assert sorted((e["name"], e["score"], e["label"]) for e in by_span[ids["agent"]]) == [
        ("politeness", 1.0, "polite"),
        ("tone", None, "ok"),
    ]
    assert by_span[ids["root"]] == []
    stored = served.rows()
    assert sorted(r[4] for r in stored) == ["politeness", "relevance", "tone"]  # nothing else kept
    assert {r[9] for r in stored} == {"judge"} and {r[10] for r in stored} == {"log"}
    metrics = served.get("/metrics").text
    assert 'reach_log_records_total{outcome="evaluation"} 3.0' in metrics
    assert 'reach_log_records_total{outcome="dropped"} 2.0' in metrics
    assert 'reach_log_records_total{outcome="rejected"} 1.0' in metrics
    assert 'reach_evaluations_total{agent="billing",evaluation="relevance",label="irrelevant"} 1.0' in metrics


def test_response_id_joins_an_evaluation_without_ids_even_before_its_span(served: Served) -> None:
    log_provider, log = logger(served)
    emit_evaluation(log, "faithfulness", response_id="chatcmpl-late", score=0.9, label="faithful")
    log_provider.shutdown()
    assert len(served.rows()) == 1  # stored while its span is still unknown
    provider, trace_source = tracer(served)
    ids = support_trace(trace_source, response_id="chatcmpl-late")
    provider.shutdown()
    by_span = served.evaluations_by_span(ids["trace"])
    assert [(e["name"], e["label"]) for e in by_span[ids["chat"]]] == [("faithfulness", "faithful")]
    quality = served.get("/api/metrics/quality", params={"window": "1h", "by": "agent"}).json()
    assert quality["groups"] == [
        {"key": "billing", "evaluations": 1, "mean_score": 0.9, "labels": {"faithful": 1}}
    ]

"""One evaluation, however it comes — an OTLP log record, a span event on ``/v1/traces`` (SDKs that
still emit those), ``POST /api/feedback`` — is the same stored row and shows on the same span."""

from __future__ import annotations

from typing import Any

from eval_helpers import Served, emit_evaluation, logger, support_trace, tracer

from reach_otel import semconv as sc

_SAME = slice(1, 10)  # trace, span, response id, name, score, label, explanation, error type, service


def _attributes(name: str) -> dict[str, Any]:
    return {
        sc.GEN_AI_EVALUATION_NAME: name,
        sc.GEN_AI_EVALUATION_SCORE_VALUE: 0.5,
        sc.GEN_AI_EVALUATION_SCORE_LABEL: "partial",
        sc.GEN_AI_EVALUATION_EXPLANATION: "half of the questions answered",
    }


def test_span_event_and_log_record_store_the_same_row(served: Served) -> None:
    provider, trace_source = tracer(served, service="judge")
    with trace_source.start_as_current_span(
        "invoke_agent billing",
        attributes={
            sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT,
            sc.GEN_AI_AGENT_NAME: "billing",
        },
    ) as span:
        span.add_event(sc.GEN_AI_EVALUATION_RESULT, _attributes("completeness"))
        span.add_event("exception", {"exception.type": "ValueError"})
        context = span.get_span_context()
    provider.shutdown()
    trace_id, span_id = format(context.trace_id, "032x"), format(context.span_id, "016x")
    log_provider, log = logger(served, service="judge")
    emit_evaluation(
        log,
        "completeness",
        trace_id=trace_id,
        span_id=span_id,
        score=0.5,
        label="partial",
        explanation="half of the questions answered",
    )
    log_provider.shutdown()
    rows = served.rows()
    assert sorted(r[10] for r in rows) == ["log", "span_event"]
    assert rows[0][_SAME] == rows[1][_SAME]
    assert rows[0][_SAME] == (
        trace_id,
        span_id,
        None,
        "completeness",
        0.5,
        "partial",
        "half of the questions answered",
        None,
        "judge",
    )
    shown = served.evaluations_by_span(trace_id)[span_id]
    assert [(e["name"], e["source"]) for e in shown] == [
        ("completeness", "span_event"),
        ("completeness", "log"),
    ] or [(e["name"], e["source"]) for e in shown] == [
        ("completeness", "log"),
        ("completeness", "span_event"),
    ]


def test_feedback_lands_on_the_root_or_the_named_span(served: Served) -> None:
    provider, trace_source = tracer(served)
    ids = support_trace(trace_source)
    provider.shutdown()
    whole = served.post(
        "/api/feedback",
        json={
            "trace_id": ids["trace"].upper(),
            "score": 0,
            "label": "thumbs_down",
            "comment": "did not fix my bill",
        },
    )
    assert whole.status_code == 202, whole.text
    one = served.post(
        "/api/feedback",
        json={"trace_id": ids["trace"], "span_id": ids["chat"], "name": "helpful", "label": "yes"},
    )
    assert one.status_code == 202
    by_span = served.evaluations_by_span(ids["trace"])
    assert [(e["name"], e["score"], e["label"], e["explanation"]) for e in by_span[ids["root"]]] == [
        (sc.EVALUATION_USER_FEEDBACK, 0.0, "thumbs_down", "did not fix my bill")
    ]
    assert [(e["name"], e["label"]) for e in by_span[ids["chat"]]] == [("helpful", "yes")]
    assert sorted(r[10] for r in served.rows()) == ["feedback", "feedback"]


def test_feedback_for_a_trace_not_yet_stored_is_shown_once_it_arrives(served: Served) -> None:
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    assert served.post("/api/feedback", json={"trace_id": trace_id, "label": "good"}).status_code == 202
    assert served.get(f"/api/traces/{trace_id}").status_code == 404
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

    class FixedTrace(RandomIdGenerator):
        def generate_trace_id(self) -> int:
            return int(trace_id, 16)

    from eval_helpers import span_exporter

    provider = TracerProvider(id_generator=FixedTrace())
    provider.add_span_processor(SimpleSpanProcessor(span_exporter(served)))
    with provider.get_tracer("t").start_as_current_span("invoke_workflow late") as late:
        late_id = format(late.get_span_context().span_id, "016x")
    provider.shutdown()
    spans = served.trace(trace_id)["spans"]
    assert [s["span_id"] for s in spans] == [late_id]
    assert [(e["name"], e["label"]) for e in spans[0].get("evaluations", [])] == [
        (sc.EVALUATION_USER_FEEDBACK, "good")
    ]


BAD_FEEDBACK = [
    ({"score": 1}, "trace_id"),
    ({"trace_id": "xyz", "score": 1}, "trace_id"),
    ({"trace_id": "0" * 32, "score": 1}, "trace_id"),
    ({"trace_id": "a" * 32, "span_id": "123", "score": 1}, "span_id"),
    ({"trace_id": "a" * 32, "score": "high"}, "score"),
    ({"trace_id": "a" * 32, "score": True}, "score"),
    ({"trace_id": "a" * 32, "label": "x" * 300}, "label"),
    ({"trace_id": "a" * 32, "name": ""}, "name"),
    ({"trace_id": "a" * 32, "comment": "x" * 5000}, "comment"),
    ({"trace_id": "a" * 32, "score": 1, "rating": 5}, "rating"),
]


def test_bad_feedback_is_a_400_naming_the_field(served: Served) -> None:
    for body, field in BAD_FEEDBACK:
        answer = served.post("/api/feedback", json=body)
        assert answer.status_code == 400, (body, answer.text)
        assert field in answer.json()["detail"], (body, answer.text)
    huge = served.post(
        "/api/feedback",
        content=b'{"trace_id": "' + b"a" * 40_000 + b'"}',
        headers={"content-type": "application/json"},
    )
    assert huge.status_code == 413
    assert served.rows() == []


def test_feedback_from_another_site_is_refused(served: Served) -> None:
    body = {"trace_id": "a" * 32, "label": "good"}
    foreign = served.post("/api/feedback", json=body, headers={"origin": "https://evil.example"})
    assert foreign.status_code == 403
    form = served.post("/api/feedback", content=b"trace_id=a", headers={"content-type": "text/plain"})
    assert form.status_code == 415
    assert served.rows() == []

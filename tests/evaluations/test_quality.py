"""``GET /api/metrics/quality`` exact on a known set, grouped by agent (the evaluated span's, else
its nearest agent ancestor's), evaluation and model; parameters validated before any work; the
``/metrics`` series count the same evaluations; a large trace (encoded a column at a time) carries
its evaluations as the small-trace path does."""

from __future__ import annotations

import time

import pytest
from eval_helpers import Served, emit_evaluation, logger, support_trace, tracer

from reach_collector.query.views import dumps, trace_json
from reach_collector.store.schema import SPAN_NAMES
from reach_otel import semconv as sc


def _known_set(served: Served) -> dict[str, dict[str, str]]:
    provider, source = tracer(served)
    first = support_trace(source, response_id="r-1")
    second = support_trace(source, response_id="r-2")
    with source.start_as_current_span(
        "invoke_agent triage",
        attributes={
            sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT,
            sc.GEN_AI_AGENT_NAME: "triage",
        },
    ) as triage:
        triage_ids = {
            "trace": format(triage.get_span_context().trace_id, "032x"),
            "agent": format(triage.get_span_context().span_id, "016x"),
        }
    provider.shutdown()
    log_provider, log = logger(served)
    now = time.time_ns()
    old = now - 2 * 3600 * 10**9
    emit_evaluation(log, "relevance", trace_id=first["trace"], span_id=first["chat"], score=0.2, label="bad")
    emit_evaluation(
        log, "relevance", trace_id=second["trace"], span_id=second["chat"], score=0.6, label="good"
    )
    emit_evaluation(log, "relevance", response_id="r-2", score=1.0, label="good")  # billing, by response id
    emit_evaluation(log, "relevance", trace_id=triage_ids["trace"], span_id=triage_ids["agent"], label="good")
    emit_evaluation(log, "tone", trace_id=first["trace"], span_id=first["agent"], score=4, label="warm")
    emit_evaluation(
        log, "tone", trace_id=first["trace"], span_id=first["agent"], score=2, time_ns=old
    )  # outside 1h
    log_provider.shutdown()
    return {"first": first, "second": second, "triage": triage_ids}


def test_quality_groups_are_exact(served: Served) -> None:
    _known_set(served)

    def groups(by: str, window: str = "1h") -> list[dict[str, object]]:
        answer = served.get("/api/metrics/quality", params={"window": window, "by": by})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["window_s"] == {"1h": 3600, "3h": 10800}[window]
        return body["groups"]  # type: ignore[no-any-return]

    assert groups("agent") == [
        {
            "key": "billing",
            "evaluations": 4,
            "mean_score": pytest.approx((0.2 + 0.6 + 1.0 + 4) / 4),
            "labels": {"bad": 1, "good": 2, "warm": 1},
        },
        {"key": "triage", "evaluations": 1, "mean_score": None, "labels": {"good": 1}},
    ]
    assert groups("evaluation") == [
        {
            "key": "relevance",
            "evaluations": 4,
            "mean_score": pytest.approx(0.6),
            "labels": {"bad": 1, "good": 3},
        },
        {"key": "tone", "evaluations": 1, "mean_score": 4.0, "labels": {"warm": 1}},
    ]
    assert groups("model") == [
        {
            "key": "gpt-judge-test",
            "evaluations": 3,
            "mean_score": pytest.approx(0.6),
            "labels": {"bad": 1, "good": 2},
        },
        {"key": None, "evaluations": 2, "mean_score": 4.0, "labels": {"good": 1, "warm": 1}},
    ]
    assert [g["evaluations"] for g in groups("evaluation", "3h")] == [4, 2]


def test_quality_parameters_are_checked(served: Served) -> None:
    for params, word in (
        ({"window": "forever"}, "window"),
        ({"window": "0s"}, "window"),
        ({"window": "9" * 50}, "window"),
        ({"by": "tool"}, "by"),
        ({"by": "x" * 5000}, "by"),
    ):
        answer = served.get("/api/metrics/quality", params=params)
        assert answer.status_code in (400, 414), (params, answer.text)
        if answer.status_code == 400:
            assert word in answer.json()["detail"]


def test_metrics_series_count_the_evaluations(served: Served) -> None:
    _known_set(served)
    text = served.get("/metrics").text
    assert 'reach_evaluations_total{agent="billing",evaluation="relevance",label="bad"} 1.0' in text
    assert 'reach_evaluations_total{agent="billing",evaluation="relevance",label="good"} 2.0' in text
    assert 'reach_evaluations_total{agent="triage",evaluation="relevance",label="good"} 1.0' in text
    assert 'reach_evaluations_total{agent="billing",evaluation="tone",label="unknown"} 1.0' in text
    assert 'reach_evaluation_score_count{agent="billing",evaluation="tone"} 2.0' in text
    assert 'reach_evaluation_score_sum{agent="billing",evaluation="tone"} 6.0' in text
    assert 'reach_evaluation_score_bucket{agent="billing",evaluation="relevance",le="0.2"} 1.0' in text
    assert 'reach_evaluation_score_bucket{agent="billing",evaluation="relevance",le="+Inf"} 3.0' in text


def test_a_large_trace_carries_its_evaluations_as_a_small_one_does(served: Served) -> None:
    provider, source = tracer(served)
    with source.start_as_current_span("invoke_workflow big") as root:
        for i in range(600):  # past span_rows.COLUMNS_FROM: the columnar encoding
            with source.start_as_current_span(f"step {i}"):
                pass
    provider.shutdown()
    trace_id = format(root.get_span_context().trace_id, "032x")
    root_id = format(root.get_span_context().span_id, "016x")
    assert (
        served.post("/api/feedback", json={"trace_id": trace_id, "label": "good", "score": 1}).status_code
        == 202
    )
    body = served.get(f"/api/traces/{trace_id}").content
    rows = served.store.query(
        f"SELECT {', '.join(SPAN_NAMES)} FROM spans WHERE trace_id = ? ORDER BY start_ns, span_id", [trace_id]
    )
    from reach_collector.query.evaluations import for_trace

    dict_rows = [dict(zip(SPAN_NAMES, r, strict=True)) for r in rows]
    reference = dumps(
        trace_json(trace_id, dict_rows, evaluations=for_trace(served.store, trace_id, dict_rows))
    )
    assert body == reference
    spans = {s["span_id"]: s for s in served.trace(trace_id)["spans"]}
    assert [(e["name"], e["label"]) for e in spans[root_id]["evaluations"]] == [
        (sc.EVALUATION_USER_FEEDBACK, "good")
    ]
    assert sum("evaluations" in s for s in spans.values()) == 1

"""`GET /api/traces?...`: every filter of §11, limit clamping, bound parameters, bad values → 400."""

from __future__ import annotations

import time

import pytest
from collector_helpers import RunningCollector, multi_agent_trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from reach_otel import semconv as sc


@pytest.fixture
def loaded(collector: RunningCollector) -> tuple[RunningCollector, dict[str, str]]:
    def exporter() -> OTLPSpanExporter:
        return OTLPSpanExporter(endpoint=collector.url + "/v1/traces")

    ids = {
        "ok": multi_agent_trace(exporter()),
        "failed": multi_agent_trace(exporter(), fail_billing=True),
        "loop": multi_agent_trace(exporter(), loop=True),
    }
    return collector, ids


def _ids(c: RunningCollector, **params: object) -> set[str]:
    response = c.get("/api/traces", params=params)
    assert response.status_code == 200, response.text
    return {t["trace_id"] for t in response.json()["traces"]}


def test_summary_shape(loaded: tuple[RunningCollector, dict[str, str]]) -> None:
    c, ids = loaded
    (summary,) = [t for t in c.get("/api/traces").json()["traces"] if t["trace_id"] == ids["ok"]]
    assert summary["root_name"] == "invoke_workflow support_turn"
    assert summary["span_count"] == 6
    assert summary["error_count"] == 0
    assert summary["agents"] == ["BillingAgent", "TriageAgent"]
    assert summary["hops"] == 1
    assert summary["duration_ms"] > 0
    assert isinstance(summary["start_time_unix_nano"], int)


def test_filters(loaded: tuple[RunningCollector, dict[str, str]]) -> None:
    c, ids = loaded
    everything = set(ids.values())
    assert _ids(c) == everything
    assert _ids(c, status="error") == {ids["failed"]}
    assert _ids(c, agent="BillingAgent") == everything
    assert _ids(c, agent="Nobody") == set()
    assert _ids(c, service="support-app") == everything
    assert _ids(c, service="other") == set()
    key = "attr." + sc.REACH_LOOP_DETECTED
    assert _ids(c, **{key: "true"}) == {ids["loop"]}
    assert _ids(c, **{"attr." + sc.GEN_AI_TOOL_NAME: "query_invoice"}) == everything
    assert _ids(c, **{"attr." + sc.GEN_AI_USAGE_INPUT_TOKENS: "100"}) == everything
    now_ns = time.time_ns()
    assert _ids(c, since=str(now_ns + 10**12)) == set()
    assert _ids(c, since="1h") == everything
    assert _ids(c, until="2000-01-01T00:00:00Z") == set()
    assert _ids(c, since="2000-01-01T00:00:00Z", until=str(now_ns + 10**12)) == everything
    assert _ids(c, min_duration_ms="0") == everything
    assert _ids(c, min_duration_ms="3600000") == set()
    assert len(_ids(c, limit="1")) == 1
    assert len(_ids(c, limit="0")) == 1  # clamped to at least one
    assert _ids(c, limit="100000") == everything  # clamped to 1000


def test_most_recent_first(loaded: tuple[RunningCollector, dict[str, str]]) -> None:
    c, ids = loaded
    traces = c.get("/api/traces").json()["traces"]
    starts = [t["start_time_unix_nano"] for t in traces]
    assert starts == sorted(starts, reverse=True)
    assert traces[0]["trace_id"] == ids["loop"]


@pytest.mark.parametrize(
    "params",
    [
        {"since": "yesterday"},
        {"until": "12:00 tomorrow"},
        {"status": "weird"},
        {"limit": "ten"},
        {"min_duration_ms": "fast"},
        {"min_duration_ms": "nan"},
        {"attr.": "x"},
    ],
)
def test_bad_parameters_are_400(
    loaded: tuple[RunningCollector, dict[str, str]], params: dict[str, str]
) -> None:
    c, _ = loaded
    response = c.get("/api/traces", params=params)
    assert response.status_code == 400
    assert response.json()["detail"]


def test_sql_looking_values_are_just_values(loaded: tuple[RunningCollector, dict[str, str]]) -> None:
    c, ids = loaded
    hostile = "x' OR 1=1; DROP TABLE spans; --"
    assert _ids(c, agent=hostile) == set()
    assert _ids(c, service=hostile) == set()
    assert _ids(c, **{f"attr.{hostile}": hostile}) == set()
    assert _ids(c, **{'attr.a"b': "1"}) == set()
    assert c.get(f"/api/traces/{ids['ok']}").status_code == 200

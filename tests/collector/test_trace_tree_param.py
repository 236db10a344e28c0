"""`GET /api/traces/{id}?tree=false`: the same trace without the nested `roots` tree (the console
draws each span's place in it, sent with the spans); the default response keeps `roots`; a bad
value is a 400 naming `tree`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from collector_helpers import RunningCollector, multi_agent_trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from reach_collector.query.views import trace_json


@pytest.fixture
def loaded(collector: RunningCollector) -> tuple[RunningCollector, str]:
    exporter = OTLPSpanExporter(endpoint=collector.url + "/v1/traces")
    return collector, multi_agent_trace(exporter, fail_billing=True)


def _walk(nodes: list[dict[str, Any]], parent: str | None, seen: list[str]) -> None:
    for node in nodes:
        assert node["parent_span_id"] == parent
        seen.append(node["span_id"])
        _walk(node["children"], node["span_id"], seen)


def test_default_response_keeps_roots(loaded: tuple[RunningCollector, str]) -> None:
    c, tid = loaded
    response = c.get(f"/api/traces/{tid}")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"trace_id", "span_count", "spans", "roots"}
    assert body["span_count"] == len(body["spans"]) == 6
    (root,) = body["roots"]
    seen: list[str] = []
    _walk([root], None, seen)
    assert sorted(seen) == sorted(s["span_id"] for s in body["spans"])
    # The bytes on the wire say what the stdlib encoder says of the same view.
    expected = json.loads(json.dumps(trace_json(tid, c.store.trace_spans(tid))))
    assert body == expected
    assert c.get(f"/api/traces/{tid}", params={"tree": "true"}).json() == body


@pytest.mark.parametrize("value", ["false", "FALSE", "0"])
def test_tree_false_leaves_roots_out(loaded: tuple[RunningCollector, str], value: str) -> None:
    c, tid = loaded
    full = c.get(f"/api/traces/{tid}").json()
    response = c.get(f"/api/traces/{tid}", params={"tree": value})
    assert response.status_code == 200, response.text
    flat = response.json()
    assert "roots" not in flat
    assert flat == {"trace_id": tid, "span_count": full["span_count"], "spans": full["spans"]}
    assert len(response.content) < len(c.get(f"/api/traces/{tid}").content) * 0.7


@pytest.mark.parametrize("value", ["", "no", "flase", "2", "x" * 500])
def test_bad_tree_value_is_400(loaded: tuple[RunningCollector, str], value: str) -> None:
    c, tid = loaded
    response = c.get(f"/api/traces/{tid}", params={"tree": value})
    assert response.status_code == 400, response.text
    detail = response.json()["detail"]
    assert "tree" in detail
    assert len(detail) < 120


def test_bad_tree_value_on_unknown_trace_is_400(collector: RunningCollector) -> None:
    response = collector.get("/api/traces/" + "ab" * 16, params={"tree": "maybe"})
    assert response.status_code == 400
    assert "tree" in response.json()["detail"]
    assert collector.get("/api/traces/" + "ab" * 16, params={"tree": "false"}).status_code == 404

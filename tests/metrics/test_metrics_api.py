"""The metrics HTTP API on a real collector fed real OTLP: §9 shapes, values, /metrics, and 400s."""

from __future__ import annotations

import pytest
from metrics_helpers import Served
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from prometheus_client.parser import text_string_to_metric_families

from reach_otel import semconv as sc

GOLDEN_FIELDS = {
    "key",
    "calls",
    "ok",
    "errors",
    "success_rate",
    "throughput_per_min",
    "p50_ms",
    "p95_ms",
    "p99_ms",
}


@pytest.fixture
def fed(served: Served) -> Served:
    """Three real requests over OTLP/HTTP: one whose billing agent fails, one that loops."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "collector"))
    from collector_helpers import multi_agent_trace

    def exporter() -> OTLPSpanExporter:  # the helper shuts its provider (and exporter) down
        return OTLPSpanExporter(endpoint=served.url + "/v1/traces")

    multi_agent_trace(exporter())
    multi_agent_trace(exporter(), fail_billing=True)
    multi_agent_trace(exporter(), loop=True)
    return served


def test_golden_shape_and_values_from_real_otlp(fed: Served) -> None:
    body = fed.get("/api/metrics/golden", window="5m", by="agent").json()
    assert body["window_s"] == 300 and body["by"] == "agent" and body["until"].endswith("Z")
    groups = {g["key"]: g for g in body["groups"]}
    assert set(groups) == {"TriageAgent", "BillingAgent"}  # the handoff's source is not a call
    for g in body["groups"]:
        assert set(g) >= GOLDEN_FIELDS
    billing = groups["BillingAgent"]
    assert (billing["calls"], billing["ok"], billing["errors"]) == (3, 2, 1)
    assert billing["success_rate"] == pytest.approx(2 / 3)
    assert billing["throughput_per_min"] == pytest.approx(2 / 5)
    assert billing["p50_ms"] <= billing["p95_ms"] <= billing["p99_ms"]
    tools = fed.get("/api/metrics/golden", by="tool").json()["groups"]
    assert [(g["key"], g["calls"]) for g in tools] == [("query_invoice", 3)]
    models = fed.get("/api/metrics/golden", by="model").json()["groups"]
    assert [(g["key"], g["calls"]) for g in models] == [("fake-model", 3)]
    services = fed.get("/api/metrics/golden", by="service").json()["groups"]
    assert [(g["key"], g["calls"]) for g in services] == [("support-app", 6)]
    ops = {g["key"]: g["calls"] for g in fed.get("/api/metrics/golden", by="operation").json()["groups"]}
    assert ops == {sc.OP_WORKFLOW: 3, sc.OP_AGENT: 6, sc.OP_HANDOFF: 3, sc.OP_CHAT: 3, sc.OP_TOOL: 3}


def test_agents_shape_and_values_from_real_otlp(fed: Served) -> None:
    body = fed.get("/api/metrics/agents", window="1h").json()
    h = body["handoffs"]
    assert {"total", "committed", "efficiency", "acceptance_rate", "commit_rate", "unknown_rate",
            "escalation_rate"} <= set(h)  # fmt: skip
    # These handoffs record "committed" without a transition count: a recorded outcome stands,
    # even where the target then failed (SPEC §11); nothing here was inferred.
    assert (h["total"], h["committed"], h["inferred"]) == (3, 3, 0)
    assert body["hops"]["traces"] == 3 and body["hops"]["p50"] == 1 and body["hops"]["share_le_2"] == 1
    assert body["loops"] == {"traces_with_loop": 1, "rate": pytest.approx(1 / 3)}
    agents = {a["agent"]: a for a in body["agents"]}
    assert (agents["BillingAgent"]["input_tokens"], agents["BillingAgent"]["output_tokens"]) == (300, 60)
    assert agents["BillingAgent"]["token_share"] == 1.0
    assert agents["BillingAgent"]["cost_usd"] == pytest.approx((300 * 1.0 + 60 * 2.0) / 1e6)
    assert agents["TriageAgent"]["input_tokens"] == 0


def test_timeseries(fed: Served) -> None:
    body = fed.get("/api/metrics/timeseries", metric="calls", by="agent", step="1m", since="10m").json()
    series = {s["key"]: s["points"] for s in body["series"]}
    assert sum(p["value"] for p in series["BillingAgent"]) == 3
    assert len(series["BillingAgent"]) == 10


def test_prometheus_endpoint_parses(fed: Served) -> None:
    response = fed.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    values = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }
    billing = (("agent", "BillingAgent"), ("service", "support-app"))
    assert values[("reach_agent_window_calls", billing)] == 3
    assert values[("reach_agent_success_ratio", billing)] == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    ("path", "params", "message"),
    [
        ("/api/metrics/golden", {"window": "5x"}, "window must be a whole number followed by s, m, h or d"),
        ("/api/metrics/golden", {"window": "0m"}, "window must be at least 1s; got '0m'"),
        ("/api/metrics/golden", {"window": "30d"}, "at most 7d"),
        ("/api/metrics/golden", {"window": "5m", "by": "user"}, "by must be one of agent, tool, model"),
        ("/api/metrics/agents", {"window": "-1h"}, "window must be"),
        ("/api/metrics/timeseries", {"metric": "latency"}, "metric must be one of"),
        ("/api/metrics/timeseries", {"metric": "p99", "step": "1 minute"}, "step must be"),
        ("/api/metrics/timeseries", {"since": "yesterday"}, "since/until"),
        ("/api/metrics/timeseries", {"since": "1m", "until": "2m"}, "since must be before"),
        ("/api/metrics/timeseries", {"since": "7d", "step": "1s"}, "too many points"),
    ],
)
def test_bad_input_is_a_400_with_a_message(
    served: Served, path: str, params: dict[str, str], message: str
) -> None:
    response = served.get(path, **params)
    assert response.status_code == 400, response.text
    assert message in response.json()["detail"]


def test_empty_collector_answers_zero_and_null(served: Served) -> None:
    golden = served.get("/api/metrics/golden").json()
    assert (
        golden["groups"] == [] and golden["total"]["calls"] == 0 and golden["total"]["success_rate"] is None
    )
    agents = served.get("/api/metrics/agents").json()
    assert agents["handoffs"]["efficiency"] is None and agents["hops"]["traces"] == 0

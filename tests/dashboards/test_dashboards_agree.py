"""The dashboards and the Prometheus rules say what the collector's API and its own alerts say.

A real collector (with a price table and a per-agent threshold) gets a finite burst of multi-agent
traffic — the library's handoffs, zero-code handoffs whose outcome is inferred, a failing agent, a
silent heartbeat — and a real Prometheus scrapes it. Each panel's expression, with its
``increase``/``rate`` over the dashboard range turned into the counter totals they sample, answers
the number ``/api/metrics/agents`` and ``/api/metrics/golden`` give for the same spans; each rule's
expression yields the collector's own alerts, same labels and same unit.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import httpx
import pytest
import yaml
from dashboard_helpers import DASHBOARDS, load_dashboards, numbers, panels, query, substitute
from dashboard_traffic import PRICES, Traffic
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Status, StatusCode

from reach_collector.alerting.inputs.store_data import StoreAlertData
from reach_collector.alerting.rules import HeartbeatLostRule, LatencyRule, SuccessRateRule
from reach_collector.query.heartbeats import last_posted
from reach_otel import semconv as sc

TURNS = 16
TECH_THRESHOLD_MS = 1e-6  # TechAgent's P99 is always above 1.5 × this: P1 breaches on both paths
MS = 1_000_000
# increase(X[$__range]) and rate(X[$__rate_interval]) → X: the totals the panel's window samples.
_WINDOWED = re.compile(r"\b(?:increase|rate)\(((?:[^()\[\]{}]|\{[^}]*\})*)\[\$__(?:range|rate_interval)\]\)")


def totals(expr: str) -> str:
    return substitute(_WINDOWED.sub(r"\1", expr), {"agent": ".*"})


def _panel(uid: str, title: str) -> dict[str, Any]:
    dashboard = next(d for d in load_dashboards().values() if d["uid"] == uid)
    return next(p for p in panels(dashboard) if p["title"] == title)


def _series(prom: str, expr: str, label: str | None = None) -> dict[str | None, float]:
    result = query(prom, totals(expr))
    assert result.get("status") == "success", (result, totals(expr))
    data = result["data"]
    if data["resultType"] == "scalar":
        return {None: numbers(result)[0]}
    return {(s["metric"].get(label) if label else None): float(s["value"][1]) for s in data["result"]}


def _target(uid: str, title: str, legend: str | None = None) -> str:
    targets = _panel(uid, title)["targets"]
    return next(t["expr"] for t in targets if legend is None or t["legendFormat"] == legend)


def _labels(labels: dict[str, str], severity: str) -> tuple[tuple[str, str], ...]:
    """An alert's label set as Alertmanager keys it (empty values dropped)."""
    return tuple(sorted({**{k: v for k, v in labels.items() if v}, "severity": severity}.items()))


def _extra_traffic(url: str) -> None:
    """Zero-code handoffs (no status: inferred), an agent failing 4 calls in 6, a lost heartbeat."""
    provider = TracerProvider(resource=Resource.create({sc.SERVICE_NAME: "ledger-svc"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url + "/v1/traces")))
    tracer = provider.get_tracer("agreement-test")
    now = time.time_ns()
    for n, target_fails in enumerate((False, False, True)):
        base = now - (10 - n) * 1000 * MS
        root = tracer.start_span(
            "invoke_workflow sdk", start_time=base, attributes={sc.GEN_AI_OPERATION_NAME: sc.OP_WORKFLOW}
        )
        ctx = trace.set_span_in_context(root)
        for name, start, end, attrs, error in (
            ("invoke_agent Router", 0, 300, {sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT}, False),
            ("handoff LedgerAgent", 100, 110, {sc.GEN_AI_HANDOFF_FROM_AGENT: "Router"}, False),
            ("invoke_agent LedgerAgent", 150, 250, {sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT}, target_fails),
        ):
            agent = name.split()[-1]
            if name.startswith("handoff"):
                attrs = {**attrs, sc.GEN_AI_HANDOFF_TO_AGENT: agent}
            else:
                attrs = {**attrs, sc.GEN_AI_AGENT_NAME: agent}
            span = tracer.start_span(name, context=ctx, start_time=base + start * MS, attributes=attrs)
            if error:
                span.set_status(Status(StatusCode.ERROR, "ledger down"))
            span.end(end_time=base + end * MS)
        root.end(end_time=base + 400 * MS)
    for _ in range(3):  # three more LedgerAgent calls, all failing: 4 of 6 fail → P0 on both paths
        span = tracer.start_span(
            "invoke_agent LedgerAgent",
            attributes={sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT, sc.GEN_AI_AGENT_NAME: "LedgerAgent"},
        )
        span.set_status(Status(StatusCode.ERROR, "ledger down"))
        span.end()
    # A heartbeat two minutes old: P2 on both paths.
    beat = tracer.start_span(
        sc.HEARTBEAT_SPAN_NAME, start_time=now - 120_001 * MS, attributes={sc.GEN_AI_AGENT_ID: "ledger-1"}
    )
    beat.end(end_time=now - 120_000 * MS)
    provider.shutdown()


def _wait_for_stable_scrapes(prom: str, collector_url: str, timeout: float = 60) -> None:
    """Until Prometheus holds, twice, the collector's current handoff and span totals."""
    deadline = time.monotonic() + timeout
    seen = 0
    while time.monotonic() < deadline:
        result = query(prom, "count_over_time(reach_collector_spans_stored_total[3s])")
        if result.get("status") == "success" and numbers(result) and numbers(result)[0] >= 2:
            stored = query(prom, "reach_collector_spans_stored_total")
            if numbers(stored) and numbers(stored)[0] == _count_stored(collector_url):
                seen += 1
                if seen >= 2:
                    return
        time.sleep(1)
    raise AssertionError("Prometheus did not catch up with the collector")


def _count_stored(url: str) -> float:
    for line in httpx.get(url + "/metrics", timeout=10).text.splitlines():
        if line.startswith("reach_collector_spans_stored_total "):
            return float(line.split()[1])
    raise AssertionError("no reach_collector_spans_stored_total")


def test_panels_and_rules_agree_with_the_collector(
    start_collector: Callable[..., Any], prometheus: Callable[[str], str]
) -> None:
    collector = start_collector(
        prices=PRICES, sections={"alerting": {"thresholds": {"TechAgent": TECH_THRESHOLD_MS}}}
    )
    prom = prometheus(collector.url.removeprefix("http://"))
    traffic = Traffic(collector.url, interval=0.05).start()
    try:
        deadline = time.monotonic() + 60
        while traffic.turns < TURNS:
            assert time.monotonic() < deadline, "traffic did not run"
            time.sleep(0.05)
    finally:
        traffic.stop()
    _extra_traffic(collector.url)
    _wait_for_stable_scrapes(prom, collector.url)

    agents = httpx.get(collector.url + "/api/metrics/agents", params={"window": "1h"}, timeout=10).json()
    golden = httpx.get(collector.url + "/api/metrics/golden", params={"window": "1h"}, timeout=10).json()
    h = agents["handoffs"]
    assert h["inferred"] == 3 and h["total"] > 3  # the zero-code handoffs are in the mix

    # Multi-agent: handoff outcomes.
    efficiency = _series(prom, _target("reach-multi-agent", "Handoff efficiency"))
    assert efficiency[None] == pytest.approx(h["efficiency"])
    for legend, want in (
        ("acceptance", h["acceptance_rate"]),
        ("commit", h["commit_rate"]),
        ("unknown", h["unknown_rate"]),
        ("escalation", h["escalation_rate"]),
        ("inferred", h["inferred"] / h["total"]),
    ):
        got = _series(prom, _target("reach-multi-agent", "Handoff outcome rates", legend))
        assert got[None] == pytest.approx(want), legend
    by_outcome = _series(prom, _target("reach-multi-agent", "Handoffs by outcome"), "status")
    del by_outcome  # the per-minute rate; its totals by (status, inferred) are checked below
    outcomes = query(prom, totals(_target("reach-multi-agent", "Handoffs by outcome").replace(" * 60", "")))
    got_outcomes = {
        (s["metric"]["status"], s["metric"]["inferred"]): float(s["value"][1])
        for s in outcomes["data"]["result"]
    }
    assert got_outcomes == {
        (o["status"], str(o["inferred"]).lower()): float(o["handoffs"]) for o in h["outcomes"]
    }

    # Multi-agent: cost (the collector's price table), token share, hops.
    per_agent = {a["agent"]: a for a in agents["agents"]}
    cost = _series(prom, _target("reach-multi-agent", "Estimated cost per agent"), "agent")
    assert cost == pytest.approx({a: e["cost_usd"] for a, e in per_agent.items() if e["cost_usd"]})
    by_model: dict[str, float] = {}
    for entry in per_agent.values():
        for m in entry["models"]:
            by_model[m["model"]] = by_model.get(m["model"], 0.0) + m["cost_usd"]
    assert set(by_model) == set(PRICES)
    assert _series(prom, _target("reach-multi-agent", "Estimated cost per model"), "model") == pytest.approx(
        by_model
    )
    share = _series(prom, _target("reach-multi-agent", "Token share per agent"), "agent")
    assert share == pytest.approx({a: e["token_share"] for a, e in per_agent.items() if e["token_share"]})
    within = _series(prom, _target("reach-multi-agent", "Requests within 2 hops"))
    assert within[None] == pytest.approx(agents["hops"]["share_le_2"])
    loops = _series(prom, _target("reach-multi-agent", "Loop rate"))
    assert loops[None] == pytest.approx(agents["loops"]["rate"]) and loops[None] > 0

    # Overview: success rate per agent, and the P0 input gauge.
    success = _series(prom, _target("reach-overview", "Success rate per agent"), "agent")
    assert success == pytest.approx({g["key"]: g["success_rate"] for g in golden["groups"]})
    assert success["LedgerAgent"] == pytest.approx(2 / 6)
    current = _series(prom, _target("reach-overview", "Current success ratio (P0 input)"), "agent")
    assert current == pytest.approx({g["key"]: g["success_rate"] for g in golden["groups"]})

    # The rules' alerts are the collector's own: same labels (empty ones dropped, as Prometheus and
    # Alertmanager do), same unit.
    data = StoreAlertData(collector.store, api_heartbeats=partial(last_posted, collector.store))
    now = time.time()
    rules = {
        "ReachSuccessRateLow": SuccessRateRule(),
        "ReachP99LatencyHigh": LatencyRule(thresholds={"TechAgent": TECH_THRESHOLD_MS}),
        "ReachAgentHeartbeatLost": HeartbeatLostRule(),
    }
    doc = yaml.safe_load((DASHBOARDS / "prometheus" / "reach-rules.yml").read_text())
    for rule in doc["groups"][0]["rules"]:
        ours = rules[rule["alert"]]
        result = query(prom, rule["expr"])
        assert result.get("status") == "success", result
        theirs = {
            tuple(sorted({**s["metric"], "severity": rule["labels"]["severity"]}.items())): float(
                s["value"][1]
            )
            for s in result["data"]["result"]
        }
        mine = {
            tuple(
                sorted({**{k: v for k, v in x.labels.items() if v}, "severity": ours.severity}.items())
            ): x.value
            for x in ours.samples(now, data)
        }
        assert theirs.keys() == mine.keys() and mine, (rule["alert"], theirs, mine)
        for key, value in mine.items():
            # P0: the same ratio; P1: the same P99 in ms; P2: an age, read a moment apart.
            assert theirs[key] == pytest.approx(value, rel=1e-9, abs=5 if ours.severity == "P2" else 1e-9), (
                key
            )
    alerts = {r["alert"]: r for r in doc["groups"][0]["rules"]}
    assert set(alerts) == set(rules)

"""The Prometheus exposition: own registry, counters/histograms folded in per batch, gauges from
the store at scrape, alert and health setters, bounded agent labels; parsed with the real parser."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from metrics_helpers import NOW_NS, new_span_id, new_trace_id, span, table, write
from prometheus_client import REGISTRY, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from reach_collector.exposition.registry import DURATION_BUCKETS, HOP_BUCKETS, Exposition
from reach_collector.query import metrics
from reach_collector.store.duckdb_store import DuckDBStore
from reach_otel import semconv as sc

S = 1_000_000_000


def _samples(exposition: Exposition) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(exposition.registry).decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def _get(samples: dict[Any, float], name: str, **labels: str) -> float:
    """A sample's value; an absent counter series is 0."""
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def _batch(rng: np.random.Generator) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for i in range(300):
        trace, agent_id = new_trace_id(), new_span_id()
        agent = ["A", "B", "C"][i % 3]
        end = NOW_NS - int(rng.integers(0, 120 * S))
        rows.append(
            span(
                trace,
                operation=sc.OP_AGENT,
                span_id=agent_id,
                end_ns=end,
                duration_ms=round(float(rng.lognormal(np.log(300), 1.0)), 3),
                error=bool(rng.random() < 0.2),
                agent=agent,
                service="svc",
            )
        )
        rows.append(
            span(
                trace,
                operation=sc.OP_CHAT,
                parent=agent_id,
                end_ns=end - S,
                duration_ms=round(float(rng.lognormal(np.log(100), 1.0)), 3),
                agent=agent,
                model="m1" if i % 2 else "m2",
                input_tokens=int(rng.integers(1, 1000)),
                output_tokens=int(rng.integers(1, 100)),
            )
        )
        for h in range(i % 4):  # 0..3 handoffs per request; every fourth request with 3 loops
            rows.append(
                span(
                    trace,
                    operation=sc.OP_HANDOFF,
                    parent=agent_id,
                    end_ns=end - 2 * S,
                    agent=agent,
                    handoff_source=agent,
                    handoff_target="B",
                    handoff_status="committed" if h else "rejected",
                    handoff_mode="delegate",
                    loop_detected=h == 2,
                )
            )
    return rows


def test_series_carry_the_synthetic_values(tmp_path: Path) -> None:
    rows = sorted(_batch(np.random.default_rng(11)), key=lambda r: r["end_ns"])  # arrival order
    store = DuckDBStore(tmp_path / "traces.duckdb")
    write(store, rows)
    exposition = Exposition(store, clock=lambda: NOW_NS / 1e9, window_s=60)
    exposition.observe(table(rows[:400]))
    exposition.observe(table(rows[400:]))  # two commits
    got = _samples(exposition)

    for agent in ("A", "B", "C"):
        for op in (sc.OP_AGENT, sc.OP_CHAT):
            mine = [r for r in rows if r["agent"] == agent and r["operation"] == op]
            for status, code in (("ok", 0), ("error", 2)):
                want = sum(r["status_code"] == code for r in mine)
                labels = {"agent": agent, "operation": op, "status": status}
                assert _get(got, "reach_agent_calls_total", **labels) == want
            seconds = np.array([r["duration_ms"] / 1000 for r in mine])
            for bound in DURATION_BUCKETS:
                name = "reach_agent_call_duration_seconds_bucket"
                labels = {"agent": agent, "operation": op, "le": str(bound)}
                assert _get(got, name, **labels) == np.sum(seconds <= bound)
            count = _get(got, "reach_agent_call_duration_seconds_count", agent=agent, operation=op)
            assert count == len(mine)
            total = _get(got, "reach_agent_call_duration_seconds_sum", agent=agent, operation=op)
            assert total == pytest.approx(seconds.sum())
        for model in ("m1", "m2"):
            llm = [r for r in rows if r["agent"] == agent and r["model"] == model]
            for kind in ("input", "output"):
                want = sum(r[f"{kind}_tokens"] for r in llm)
                labels = {"agent": agent, "model": model, "type": kind}
                assert _get(got, "reach_agent_tokens_total", **labels) == want
    # Handoffs are never calls; they have their own counter.
    assert not any(k[0] == "reach_agent_calls_total" and ("operation", "handoff") in k[1] for k in got)
    handoffs = [r for r in rows if r["operation"] == sc.OP_HANDOFF]
    labels = {"source": "A", "target": "B", "mode": "delegate", "inferred": "false"}
    for status in ("committed", "rejected"):  # recorded outcomes stand (SPEC §11)
        counted = _get(got, "reach_handoffs_total", **labels, status=status)
        assert counted == sum(r["agent"] == "A" and r["handoff_status"] == status for r in handoffs) > 0
    loops = sum(_get(got, "reach_loops_detected_total", agent=a) for a in ("A", "B", "C"))
    assert loops == sum(bool(r["loop_detected"]) for r in handoffs)
    # Hops per request: every request here is rooted at its agent span.
    per_request = np.array([i % 4 for i in range(300)])
    for bound in HOP_BUCKETS:
        assert _get(got, "reach_request_hops_bucket", le=str(bound)) == np.sum(per_request <= bound)
    assert _get(got, "reach_request_hops_sum") == per_request.sum()
    # Requests with a loop (the API's loop rate counts requests, not the handoffs that saw it).
    assert _get(got, "reach_requests_looped_total") == sum(i % 4 == 3 for i in range(300))
    # Window gauges equal the query layer's answer at the same now.
    stats = metrics.agent_window_stats(store, NOW_NS, 60)
    assert stats
    for agent, s in stats.items():
        # The alerts' labels: agent and the agent's service (SPEC §11), as the collector's own.
        who = {"agent": agent, "service": s["service"]}
        assert s["service"] == "svc"
        ratio = _get(got, "reach_agent_success_ratio", **who)
        assert ratio == pytest.approx((s["calls"] - s["errors"]) / s["calls"])
        assert _get(got, "reach_agent_latency_p99_seconds", **who) == pytest.approx(s["p99_ms"] / 1000)
        assert _get(got, "reach_agent_window_calls", **who) == s["calls"]
    store.close()


def test_heartbeats_alerts_and_health(tmp_path: Path) -> None:
    store = DuckDBStore(tmp_path / "traces.duckdb")
    beat = span(
        new_trace_id(),
        operation=None,
        name=sc.HEARTBEAT_SPAN_NAME,
        end_ns=NOW_NS - 30 * S,
        attributes={sc.GEN_AI_AGENT_ID: "billing-1"},
    )
    write(store, [beat])
    # A POSTed heartbeat names its service: the label the collector's P2 alert carries.
    store.append("heartbeats", [("ledger-1", NOW_NS - 20 * S, "ledger-svc", None, None, None)])
    exposition = Exposition(store, clock=lambda: NOW_NS / 1e9, thresholds_ms={"billing": 2000})
    exposition.record_heartbeat("tech-1", NOW_NS / 1e9 - 5)
    exposition.set_alert_state("ReachSuccessRateLow", "P0", {"agent": "billing", "service": "svc"}, "firing")
    exposition.set_alert_state("ReachP99LatencyHigh", "P1", {"agent": "tech", "service": "svc"}, "pending")
    exposition.set_alert_state("ReachP99LatencyHigh", "P1", {"agent": "tech", "service": "svc"}, "resolved")
    exposition.spans_received(100, rejected=3)
    exposition.set_queue_depth(lambda: 42)
    exposition.observe_write(0.004)
    exposition.observe_write(0.2)
    got = _samples(exposition)
    name = "reach_agent_last_heartbeat_timestamp_seconds"
    assert _get(got, name, agent="billing-1", service="") == pytest.approx(NOW_NS / 1e9 - 30)
    assert _get(got, name, agent="tech-1", service="") == pytest.approx(NOW_NS / 1e9 - 5)
    assert _get(got, name, agent="ledger-1", service="ledger-svc") == pytest.approx(NOW_NS / 1e9 - 20)
    labels = {"alertname": "ReachSuccessRateLow", "severity": "P0", "agent": "billing", "service": "svc"}
    assert _get(got, "reach_alert_state", **labels, alertstate="firing") == 1
    assert not [k for k in got if k[0] == "reach_alert_state" and ("agent", "tech") in k[1]]
    assert _get(got, "reach_agent_latency_threshold_seconds", agent="billing") == 2.0
    assert _get(got, "reach_collector_spans_received_total") == 100
    assert _get(got, "reach_collector_spans_rejected_total") == 3
    assert _get(got, "reach_collector_queue_spans") == 42
    assert _get(got, "reach_collector_write_seconds_bucket", le="0.005") == 1
    assert _get(got, "reach_collector_write_seconds_count") == 2
    store.close()


def test_agent_labels_are_bounded() -> None:
    exposition = Exposition(None, max_agents=3)
    rows = [
        span(new_trace_id(), operation=sc.OP_AGENT, end_ns=NOW_NS, agent=f"agent-{i}", duration_ms=5.0)
        for i in range(10)
    ]
    exposition.observe(table(rows))
    got = _samples(exposition)
    agents = {dict(k[1])["agent"] for k in got if k[0] == "reach_agent_calls_total"}
    # Which three get their own label within one batch is arbitrary; the rest share "other".
    assert len(agents) == 4 and "other" in agents and agents <= {f"agent-{i}" for i in range(10)} | {"other"}
    assert _get(got, "reach_agent_calls_total", agent="other", operation=sc.OP_AGENT, status="ok") == 7


def test_own_registry_never_the_global_one() -> None:
    exposition = Exposition(None)
    exposition.observe(table([span(new_trace_id(), operation=sc.OP_AGENT, end_ns=NOW_NS, agent="A")]))
    assert b"reach_agent_calls_total" in generate_latest(exposition.registry)
    assert b"reach_agent_calls_total" not in generate_latest(REGISTRY)

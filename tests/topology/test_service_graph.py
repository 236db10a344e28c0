"""Grafana's service graph from the collector's /metrics (SPEC §15): the traces_service_graph_*
series count each handoff once its outcome is known (client = source agent, server = target
agent, failed = failed, rejected or unknown), agree with reach_handoffs_total and /api/topology;
then a real Prometheus scrapes the collector and runs the queries Grafana's Tempo data source
sends for its service graph, and the multi-agent dashboard's Node Graph panel queries."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import pytest
from dashboard_helpers import load_dashboards, panels, query, substitute
from dashboard_traffic import Traffic
from prometheus_client.parser import text_string_to_metric_families
from test_topology_api import _send_known_traffic
from topology_helpers import App, Collector

Edge = tuple[str, str]
TIMEOUT_S = 600.0  # how long the exposition waits for a handoff's target (its default)


def _samples(text: str) -> dict[str, dict[tuple[Any, ...], float]]:
    out: dict[str, dict[tuple[Any, ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            labels = s.labels
            if s.name.startswith("traces_service_graph_request"):
                key: tuple[Any, ...] = (labels["client"], labels["server"])
                if "le" in labels:
                    key = (*key, float(labels["le"]))
            elif s.name == "reach_handoffs_total":
                key = (labels["source"], labels["target"])
            else:
                continue
            series = out.setdefault(s.name, {})
            series[key] = series.get(key, 0.0) + s.value
    return out


def test_edges_are_counted_once_their_outcome_is_known(
    start_collector: Callable[..., Collector], apps: Callable[..., App]
) -> None:
    offset = [0.0]
    collector = start_collector(clock=lambda: time.time() + offset[0], alert_loop=False)
    _send_known_traffic(collector, apps)
    got = _samples(collector.get("/metrics").text)
    total = got["traces_service_graph_request_total"]
    # Triage → Billing's handoff whose target never ran after it waits for the timeout. (The
    # counters have no window: the two-hour-old Triage → Ghost handoff is in them.)
    assert total == {
        ("Triage", "Billing"): 4,
        ("Billing", "Triage"): 2,
        ("Triage", "Tech"): 2,
        ("Triage", "Ghost"): 1,
    }
    offset[0] = TIMEOUT_S + 1
    got = _samples(collector.get("/metrics").text)
    total, failed = (
        got["traces_service_graph_request_total"],
        got["traces_service_graph_request_failed_total"],
    )
    assert total == {
        ("Triage", "Billing"): 5,
        ("Billing", "Triage"): 2,
        ("Triage", "Tech"): 2,
        ("Triage", "Ghost"): 1,
    }
    # failed = rejected + failed + unknown; an edge with none has a 0 series.
    assert failed == {
        ("Triage", "Billing"): 3,
        ("Billing", "Triage"): 0,
        ("Triage", "Tech"): 1,
        ("Triage", "Ghost"): 0,
    }
    assert total == got["reach_handoffs_total"]
    # The same edges and counts as /api/topology (over a window that still holds the traffic).
    topology = collector.get("/api/topology", window="3h").json()
    assert {(e["source"], e["target"]): e["handoffs"] for e in topology["edges"]} == total
    assert {
        (e["source"], e["target"]): e["failed"] + e["rejected"] + e["unknown"] for e in topology["edges"]
    } == failed
    # Both histograms hold the handoff spans' durations: Triage → Billing 100…500 ms.
    for side in ("server", "client"):
        name = f"traces_service_graph_request_{side}_seconds"
        assert got[f"{name}_count"] == total
        assert got[f"{name}_sum"][("Triage", "Billing")] == pytest.approx(1.5)
        assert got[f"{name}_sum"][("Triage", "Tech")] == pytest.approx(1.02)
        buckets = {
            le: n for (c, s, le), n in got[f"{name}_bucket"].items() if (c, s) == ("Triage", "Billing")
        }
        assert buckets == {0.1: 1, 0.2: 2, 0.4: 4, 0.8: 5, 1.6: 5, 3.2: 5, 6.4: 5, 12.8: 5, math.inf: 5}


def _by_edge(result: dict[str, Any]) -> dict[Edge, float]:
    assert result.get("status") == "success", result
    return {
        (r["metric"]["client"], r["metric"]["server"]): float(r["value"][1]) for r in result["data"]["result"]
    }


def _wait(prom: str, expr: str, ok: Callable[[dict[str, Any]], bool], timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        result = query(prom, expr)
        if result.get("status") == "success" and ok(result):
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"{expr}: {result}")
        time.sleep(0.5)


# What Grafana's Tempo data source sends for its service graph (serviceMap.datasourceUid): one
# instant table query per series, summed by client and server over the picked range.
SERVICE_MAP = (
    "traces_service_graph_request_server_seconds_sum",
    "traces_service_graph_request_total",
    "traces_service_graph_request_failed_total",
    "traces_service_graph_request_server_seconds_bucket",
)


def test_grafana_service_graph_queries_on_real_prometheus(
    start_collector: Callable[..., Collector], prometheus: Callable[..., str]
) -> None:
    collector = start_collector()
    traffic = Traffic(collector.url).start()
    try:
        prom = prometheus(collector.url.removeprefix("http://"))
        # Enough scrapes for rates over a 20-second range.
        _wait(
            prom,
            "count_over_time(traces_service_graph_request_total[1m])",
            lambda r: any(float(x["value"][1]) >= 12 for x in r["data"]["result"]),
        )
        edges = {
            ("TriageAgent", "BillingAgent"),
            ("TriageAgent", "TechAgent"),
            ("BillingAgent", "TriageAgent"),
        }
        for metric in SERVICE_MAP:
            by = "client, server, le" if metric.endswith("_bucket") else "client, server"
            found = _by_edge(query(prom, f"sum by ({by}) (rate({metric}[20s]))"))
            assert {edge[:2] for edge in found} == edges, (metric, found)
            if metric == "traces_service_graph_request_failed_total":
                # Billing fails one call in three: its handoffs fail; Tech never does.
                assert found[("TriageAgent", "BillingAgent")] > 0 and found[("TriageAgent", "TechAgent")] == 0
            elif not metric.endswith("_bucket"):
                assert all(v > 0 for v in found.values()), (metric, found)
        # Newer Grafana versions also ask for the edges' connection types.
        grouped = _by_edge(
            query(prom, "group by (client, connection_type, server) (traces_service_graph_request_total)")
        )
        assert set(grouped) == edges

        # The multi-agent dashboard's Node Graph panel: nodes carry id/title, edges id/source/target.
        dashboard = load_dashboards()["reach-multi-agent.json"]
        panel = next(p for p in panels(dashboard) if p["type"] == "nodeGraph")
        values = {"agent": ".*", "__range": "1m", "__rate_interval": "10s"}
        nodes_expr, edges_expr = (substitute(t["expr"], values) for t in panel["targets"])
        nodes = query(prom, nodes_expr)["data"]["result"]
        assert {(n["metric"]["id"], n["metric"]["title"]) for n in nodes} == {
            (a, a) for a in ("TriageAgent", "BillingAgent", "TechAgent")
        }
        drawn = query(prom, edges_expr)["data"]["result"]
        assert {(e["metric"]["source"], e["metric"]["target"]) for e in drawn} == edges
        assert {e["metric"]["id"] for e in drawn} == {f"{s} → {t}" for s, t in edges}
        assert all(float(e["value"][1]) > 0 for e in drawn)
    finally:
        traffic.stop()
    # Once the traffic stops and Prometheus scraped again, its counters equal the collector's
    # edges: every handoff of this traffic recorded its outcome, so none is pending.
    want = {
        (e["source"], e["target"]): float(e["handoffs"])
        for e in collector.get("/api/topology").json()["edges"]
    }
    _wait(prom, "sum by (client, server) (traces_service_graph_request_total)", lambda r: _by_edge(r) == want)

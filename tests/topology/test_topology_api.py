"""``GET /api/topology`` on known traffic sent over real OTLP/HTTP: every count of every edge and
node pinned — outcomes by the §11 rule (recorded, or inferred from the target's next agent span),
inferred counts, p95 of the handoff spans, loops, the usual mode — the service filter, the window
bound, and 400s for bad parameters."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from topology_helpers import App, Collector, S


def _send_known_traffic(collector: Collector, apps: Callable[..., App]) -> None:
    app = apps(collector.url)
    # Triage → Billing, five handoffs: two recorded, three left to Billing's next run.
    for k, (status, dur, runs) in enumerate(
        [
            ("committed", 100, [(150, False)]),
            ("rejected", 200, []),
            (None, 300, [(350, True)]),  # Billing's next run failed: failed, inferred
            (None, 400, [(-50, True)]),  # Billing ran only *before* it: unknown, inferred
            (None, 500, [(550, False)]),  # committed, inferred
        ]
    ):
        ctx = app.trace(k * 2000)
        app.agent(ctx, "Triage", k * 2000, 100 * (k + 1))
        app.handoff(ctx, "Triage", "Billing", k * 2000 + 10, dur, status)
        for at, error in runs:
            app.agent(ctx, "Billing", k * 2000 + at, 200, error=error)
    # Billing → Triage: a loop closed twice, in two modes.
    ctx = app.trace(10_000)
    app.agent(ctx, "Triage", 10_000, 600)
    app.handoff(ctx, "Billing", "Triage", 10_010, 50, "committed", mode="consult", loop=True)
    app.handoff(ctx, "Billing", "Triage", 10_100, 150, "running", mode="delegate", loop=True)
    # Triage → Tech: an escalation that failed; Tech never runs and uses an unpriced model.
    ctx = app.trace(12_000)
    app.agent(ctx, "Triage", 12_000, 700)
    app.agent(ctx, "Triage", 12_000, 800, error=True)
    app.handoff(ctx, "Triage", "Tech", 12_010, 1000, "failed", mode="escalate")
    app.llm(ctx, "Tech", 12_020, "mystery", 10, 10)
    # Tokens: Triage on the small model, Billing on both.
    app.llm(ctx, "Triage", 12_030, "small", 1000, 500)
    app.llm(ctx, "Billing", 12_040, "large", 2000, 100)
    app.llm(ctx, "Billing", 12_050, "small", 100, 100)
    app.flush()
    # Another service: one more Triage call and a committed Triage → Tech handoff.
    other = apps(collector.url, service="other-app")
    ctx = other.trace(14_000)
    other.agent(ctx, "Triage", 14_000, 100)
    other.handoff(ctx, "Triage", "Tech", 14_010, 20, "committed")
    other.flush()
    # Two hours ago: outside a 1-hour window.
    old = apps(collector.url, base_ns=time.time_ns() - 2 * 3600 * S)
    ctx = old.trace()
    old.handoff(ctx, "Triage", "Ghost", 10, 20, "committed")
    old.agent(ctx, "Ghost", 40)
    old.flush()


def _by_edge(body: dict) -> dict[tuple[str, str], dict]:
    return {(e["source"], e["target"]): e for e in body["edges"]}


def _by_node(body: dict) -> dict[str, dict]:
    return {n["agent"]: n for n in body["nodes"]}


def test_every_edge_and_node_count_is_pinned(collector: Collector, apps: Callable[..., App]) -> None:
    _send_known_traffic(collector, apps)
    body = collector.get("/api/topology", window="1h").json()
    assert body["window_s"] == 3600 and body["until"].endswith("Z")
    edges = _by_edge(body)
    assert list(edges) == [("Triage", "Billing"), ("Billing", "Triage"), ("Triage", "Tech")]
    tb = edges[("Triage", "Billing")]
    assert {k: tb[k] for k in ("mode", "handoffs", "committed", "rejected", "failed", "unknown")} == {
        "mode": "delegate",
        "handoffs": 5,
        "committed": 2,
        "rejected": 1,
        "failed": 1,
        "unknown": 1,
    }
    assert tb["inferred"] == 3 and tb["loops"] == 0
    assert tb["p95_ms"] == pytest.approx(480.0)  # 400 + 0.8 × 100 (linear interpolation)
    assert tb["statuses"] == {"committed": 2, "failed": 1, "rejected": 1, "unknown": 1}
    bt = edges[("Billing", "Triage")]
    assert (bt["handoffs"], bt["committed"], bt["rejected"], bt["failed"], bt["unknown"]) == (2, 1, 0, 0, 0)
    assert bt["statuses"] == {"committed": 1, "running": 1}  # running: taken on, no outcome field
    assert (bt["inferred"], bt["loops"]) == (0, 2)
    assert bt["modes"] == {"consult": 1, "delegate": 1} and bt["mode"] == "consult"  # a tie: by name
    assert bt["p95_ms"] == pytest.approx(145.0)
    tt = edges[("Triage", "Tech")]
    assert (tt["handoffs"], tt["committed"], tt["failed"], tt["inferred"]) == (2, 1, 1, 0)
    assert tt["modes"] == {"delegate": 1, "escalate": 1}

    nodes = _by_node(body)
    assert set(nodes) == {"Triage", "Billing", "Tech"}  # Ghost ran outside the window
    triage, billing, tech = nodes["Triage"], nodes["Billing"], nodes["Tech"]
    assert (triage["calls"], triage["errors"]) == (9, 1)
    assert (billing["calls"], billing["errors"], billing["p95_ms"]) == (4, 2, pytest.approx(200.0))
    assert (tech["calls"], tech["errors"], tech["p95_ms"]) == (0, 0, None)
    assert (triage["input_tokens"], triage["output_tokens"]) == (1000, 500)
    assert triage["cost_usd"] == pytest.approx((1000 * 1.0 + 500 * 2.0) / 1e6)
    assert (billing["input_tokens"], billing["output_tokens"]) == (2100, 200)
    assert billing["cost_usd"] == pytest.approx((2000 * 10 + 100 * 30 + 100 * 1 + 100 * 2) / 1e6)
    assert (tech["input_tokens"], tech["output_tokens"], tech["cost_usd"]) == (10, 10, None)  # unpriced
    assert [n["agent"] for n in body["nodes"]] == ["Triage", "Billing", "Tech"]  # most calls first


def test_the_service_filter_and_the_window(collector: Collector, apps: Callable[..., App]) -> None:
    _send_known_traffic(collector, apps)
    body = collector.get("/api/topology", window="1h", service="support-app").json()
    assert body["service"] == "support-app"
    tt = _by_edge(body)[("Triage", "Tech")]
    assert (tt["handoffs"], tt["committed"], tt["failed"], tt["mode"]) == (1, 0, 1, "escalate")
    assert _by_node(body)["Triage"]["calls"] == 8
    # p95 of Triage's eight support-app calls: 100..800 ms → 700 + 0.65 × 100.
    assert _by_node(body)["Triage"]["p95_ms"] == pytest.approx(765.0)
    other = collector.get("/api/topology", window="1h", service="other-app").json()
    assert [(e["source"], e["target"], e["handoffs"]) for e in other["edges"]] == [("Triage", "Tech", 1)]
    assert {n["agent"]: n["calls"] for n in other["nodes"]} == {"Triage": 1, "Tech": 0}
    # The three-hour window reaches the old trace; one minute reaches nothing.
    wide = _by_edge(collector.get("/api/topology", window="3h").json())
    assert wide[("Triage", "Ghost")]["committed"] == 1
    assert collector.get("/api/topology", window="1m").json() | {"until": None} == {
        "window_s": 60,
        "until": None,
        "service": None,
        "nodes": [],
        "edges": [],
    }


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"window": "soon"}, "window must be"),
        ({"window": "30d"}, "at most 7d"),
        ({"service": ""}, "service must be"),
        ({"service": "x" * 300}, "service must be"),
    ],
)
def test_bad_parameters_are_400s(collector: Collector, params: dict[str, str], needle: str) -> None:
    response = collector.get("/api/topology", **params)
    assert response.status_code == 400 and needle in response.json()["detail"]

"""The agent graph's edge labels (Topology page and the trace page) keep off each other and off the
agents' boxes, and stay inside the drawing: measured in a real Chromium from the rendered SVG text,
for topologies that crowd them (a fan-out to a column of agents with arcs inside the column and
returns to the caller; handoffs both ways between every pair)."""

from __future__ import annotations

from typing import Any

import pytest
from cdp import Page
from console_helpers import goto_ready
from traffic import attributes, post, request

from reach_otel import semconv as sc


def _edge(source: str, target: str, handoffs: int, committed: int, inferred: int = 0, loops: int = 0) -> Any:
    return {
        "source": source,
        "target": target,
        "mode": "delegate",
        "handoffs": handoffs,
        "committed": committed,
        "failed": handoffs - committed,
        "rejected": 0,
        "unknown": 0,
        "inferred": inferred,
        "p95_ms": 35.0,
        "loops": loops,
    }


def _topology(agents: list[str], edges: list[Any]) -> Any:
    nodes = [
        {
            "agent": a,
            "calls": 100,
            "errors": 3,
            "p95_ms": 110.0,
            "input_tokens": 10,
            "output_tokens": 5,
            "cost_usd": None,
        }
        for a in agents
    ]
    return {"window_s": 3600, "nodes": nodes, "edges": edges}


WORKERS = ["BillingAgent", "TechSupportAgent", "RefundAgent", "WriterAgent"]
TOPOLOGIES = {
    # The demo's support desk over an hour: what the Topology screenshot shows.
    "fan-out": _topology(
        ["TriageAgent", *WORKERS],
        [
            _edge("TriageAgent", "BillingAgent", 556, 423, 69, 36),
            _edge("TriageAgent", "TechSupportAgent", 382, 352, 69),
            _edge("TriageAgent", "RefundAgent", 348, 317, 70),
            _edge("TriageAgent", "WriterAgent", 348, 314, 71),
            _edge("BillingAgent", "TechSupportAgent", 44, 39, 9, 44),
            _edge("TechSupportAgent", "RefundAgent", 44, 39, 9, 44),
            _edge("RefundAgent", "WriterAgent", 44, 41, 8, 44),
            _edge("BillingAgent", "WriterAgent", 43, 39, 8, 43),
            _edge("BillingAgent", "TriageAgent", 36, 36, 36, 36),
            _edge("WriterAgent", "TriageAgent", 30, 20, 30),
        ],
    ),
    "both-ways": _topology(
        ["A", "B", "C", "D"],
        [
            _edge(s, t, n, n - 10 if n > 10 else n)
            for s, t, n in [
                ("A", "B", 100),
                ("B", "A", 90),
                ("A", "C", 80),
                ("C", "A", 70),
                ("B", "C", 60),
                ("C", "B", 50),
                ("A", "D", 40),
                ("D", "C", 30),
                ("C", "D", 20),
                ("B", "D", 10),
                ("D", "B", 5),
            ]
        ],
    ),
}

# Rendered boxes (user units of the SVG) of every edge label and every agent box, and what collides.
MEASURE = """((id) => {
  const svg = document.getElementById(id);
  const vb = svg.viewBox.baseVal;
  const labels = [...svg.querySelectorAll('.edge-label')].map((el) => {
    const b = el.getBBox();
    return {x: b.x, y: b.y, w: b.width, h: b.height, name: el.textContent};
  });
  const nodes = [...svg.querySelectorAll('.node')].map((g) => {
    const m = g.transform.baseVal.consolidate().matrix;
    const r = g.querySelector('.node-box').getBBox();
    return {x: r.x + m.e, y: r.y + m.f, w: r.width, h: r.height, name: g.dataset.agent};
  });
  const hit = (a, b) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
  const found = [];
  labels.forEach((a, i) => {
    labels.slice(i + 1).forEach((b) => { if (hit(a, b)) found.push(`label ${a.name} on label ${b.name}`); });
    nodes.forEach((n) => { if (hit(a, n)) found.push(`label ${a.name} on agent ${n.name}`); });
    if (a.x < vb.x || a.y < vb.y || a.x + a.w > vb.x + vb.width || a.y + a.h > vb.y + vb.height) {
      found.push(`label ${a.name} outside the drawing`);
    }
  });
  return {found, labels: labels.length, edges: svg.querySelectorAll('.edge').length};
})"""


@pytest.mark.parametrize("name", list(TOPOLOGIES))
def test_edge_labels_keep_off_each_other_and_the_agents(start_console, page: Page, name: str) -> None:
    from fastapi import APIRouter

    topology = TOPOLOGIES[name]
    console = start_console()
    stand_in = APIRouter()
    stand_in.add_api_route("/api/topology", lambda window: topology, methods=["GET"])
    console.app.router.routes[:0] = stand_in.routes
    goto_ready(page, console.url + "/ui/topology")
    assert page.events.errors == []
    result = page.js(f"{MEASURE}('topology-graph')")
    assert result["labels"] == result["edges"] == len(topology["edges"])
    assert result["found"] == []


def _ping_pong(trace_id: str, handoffs: int) -> list[Any]:
    """A workflow whose two agents hand the request back and forth ``handoffs`` times: the trace
    page's graph is then two boxes side by side, with a label on each edge between them."""
    t0, ms = 1_800_000_000_000_000_000, 1_000_000

    def span(n: int, parent: int | None, name: str, attrs: dict[str, Any]) -> Any:
        out = {
            "traceId": trace_id,
            "spanId": f"{n:016x}",
            "name": name,
            "kind": 1,
            "startTimeUnixNano": str(t0 + n * ms),
            "endTimeUnixNano": str(t0 + (200 - n) * ms),
            "attributes": attributes(attrs),
            "status": {"code": 1},
        }
        if parent is not None:
            out["parentSpanId"] = f"{parent:016x}"
        return out

    agents = ("TriageAgent", "BillingAgent")
    spans = [span(1, None, "invoke_workflow support_turn", {sc.GEN_AI_OPERATION_NAME: sc.OP_WORKFLOW})]
    parent = 1
    for hop in range(handoffs + 1):
        agent, n = agents[hop % 2], 2 * hop + 2
        spans.append(
            span(
                n,
                parent,
                f"invoke_agent {agent}",
                {sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT, sc.GEN_AI_AGENT_NAME: agent},
            )
        )
        if hop == handoffs:
            break
        target = agents[(hop + 1) % 2]
        handoff = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_HANDOFF,
            sc.REACH_HANDOFF_SOURCE: agent,
            sc.REACH_HANDOFF_TARGET: target,
            sc.REACH_HANDOFF_STATUS: "committed",
            sc.REACH_HOP_COUNT: hop + 1,
            sc.REACH_LOOP_DETECTED: hop >= 2,  # the labels then carry the loop mark too
        }
        spans.append(span(n + 1, n, f"handoff {target}", handoff))
        parent = n + 1
    return spans


def test_the_trace_pages_graph_labels_keep_off_the_agents(start_console, page: Page) -> None:
    """Two agents side by side, closer than a label is wide: the label goes above the pair rather
    than onto the boxes (what the demo's ping-pong trace looks like)."""
    console = start_console()
    trace_id = "9a9e" + "ef" * 14
    post(console.url, request(_ping_pong(trace_id, 7)))
    goto_ready(page, f"{console.url}/ui/trace/{trace_id}")
    assert page.events.errors == []
    result = page.js(f"{MEASURE}('agent-graph')")
    assert result["labels"] == result["edges"] == 2
    assert result["found"] == []

"""The console's drawings measured in a real Chromium, on a real collector.

Agent graphs (the Topology page and the trace page's graph): no edge runs through an agent box it
does not start or end at (points sampled along each SVG path), every edge label sits on its own
edge, off the agent boxes, off every other label and off every other edge. The timeline: each bar's
text sits beside its bar, never over it; span names and attribute keys break only at word, dot or
underscore boundaries, and are whole (or whole on hover). On the demo's shapes of traffic (a triage
agent handing off to workers; the ping-pong between two agents) and on a supervisor whose workers
hand back to it (supervisor → budget_agent → supervisor, supervisor → weather_agent → supervisor)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from cdp import Page
from console_helpers import Console, goto_ready
from traffic import agent_trace, attributes, post, request

from reach_otel import semconv as sc

MS = 1_000_000

# What collides in an agent graph, in the SVG's own units. An edge is its drawn path (not the
# wider transparent one that takes clicks); a label is its text's box.
GRAPH = """((id) => {
  const svg = document.getElementById(id);
  if (!svg) return {missing: true};
  const nodes = [...svg.querySelectorAll('.node')].map((g) => {
    const m = g.transform.baseVal.consolidate().matrix;
    const r = g.querySelector('.node-box').getBBox();
    return {x: r.x + m.e, y: r.y + m.f, w: r.width, h: r.height, name: g.dataset.agent};
  });
  const edges = [...svg.querySelectorAll('.edge')].map((g) => {
    const path = g.querySelector('path:not(.hit)');
    const length = path.getTotalLength();
    const points = [];
    for (let at = 0; at <= length; at += 1) points.push(path.getPointAtLength(at));
    points.push(path.getPointAtLength(length));
    return {source: g.dataset.source, target: g.dataset.target, points};
  });
  const labels = [...svg.querySelectorAll('text.edge-label')].map((el) => {
    const b = el.getBBox();
    const text = [...el.childNodes].filter((n) => n.nodeType === 3).map((n) => n.data).join('');
    const [source, target] = [el.dataset.source, el.dataset.target];
    return {x: b.x, y: b.y, w: b.width, h: b.height, source, target, name: `${source}→${target} "${text}"`};
  });
  const inside = (p, r, margin) =>
    p.x > r.x + margin && p.x < r.x + r.w - margin && p.y > r.y + margin && p.y < r.y + r.h - margin;
  const hit = (a, b) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
  const found = [];
  for (const e of edges) {
    for (const n of nodes) {
      if (n.name === e.source || n.name === e.target) continue;
      const name = `edge ${e.source}→${e.target}`;
      if (e.points.some((p) => inside(p, n, 1))) found.push(`${name} crosses agent ${n.name}`);
    }
  }
  labels.forEach((a, i) => {
    labels.slice(i + 1).forEach((b) => { if (hit(a, b)) found.push(`label ${a.name} on label ${b.name}`); });
    for (const n of nodes) if (hit(a, n)) found.push(`label ${a.name} on agent ${n.name}`);
    const own = edges.find((e) => e.source === a.source && e.target === a.target);
    const near = {x: a.x - 3, y: a.y - 3, w: a.w + 6, h: a.h + 6};
    if (!own || !own.points.some((p) => inside(p, near, 0))) found.push(`label ${a.name} is not on its edge`);
    for (const e of edges) {
      if (e === own) continue;
      const name = `edge ${e.source}→${e.target}`;
      if (e.points.some((p) => inside(p, a, 1))) found.push(`${name} runs through label ${a.name}`);
    }
  });
  return {found, nodes: nodes.length, edges: edges.length, labels: labels.length};
})"""

# A line may break after a space, dot, underscore, slash, colon or hyphen, or between a lower-case
# letter and a capital (BillingAgent): a word or dot boundary.
BOUNDARY = """(before, after) =>
    /[\\s._/:-]$/.test(before) || /^\\s/.test(after) || (/[a-z0-9]$/.test(before) && /^[A-Z]/.test(after))"""

# Each rendered timeline row: where its bar and the visible part of its text are (page pixels),
# and where its name's lines break.
TIMELINE = (
    """(() => {
  const rows = [...document.querySelectorAll('.wf-row')].filter((r) => !r.hidden && r.offsetParent);
  const boundary = """
    + BOUNDARY
    + """;
  return rows.map((row) => {
    const bar = row.querySelector('.bar').getBoundingClientRect();
    const el = row.querySelector('.bar-text');
    const box = el.getBoundingClientRect();
    const pad = parseFloat(getComputedStyle(el).paddingLeft);
    const range = document.createRange();
    range.selectNodeContents(el);
    const glyphs = range.getBoundingClientRect();
    const left = Math.max(glyphs.left, box.left + pad);
    const right = Math.min(glyphs.right, box.right - pad);
    const name = row.querySelector('.name');
    const text = name.textContent;
    const breaks = [];
    const walker = document.createTreeWalker(name, NodeFilter.SHOW_TEXT);
    const chars = [];
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      for (let i = 0; i < n.data.length; i++) chars.push([n, i]);
    }
    let top = null;
    let seen = '';
    for (const [n, i] of chars) {
      const r = document.createRange();
      r.setStart(n, i);
      r.setEnd(n, i + 1);
      const rect = r.getClientRects()[0];
      const rest = n.data.slice(i);
      if (rect && top !== null && rect.top > top + 2 && !boundary(seen, rest)) breaks.push(`${seen}|${rest}`);
      if (rect) top = rect.top;
      seen += n.data[i];
    }
    return {
      span: row.dataset.spanId,
      name: text,
      title: name.title,
      whole: name.scrollWidth <= name.clientWidth + 1 && name.scrollHeight <= name.clientHeight + 1,
      breaks,
      text: el.textContent,
      hover: row.querySelector('.wf-lane').title || '',
      bar: [bar.left, bar.right],
      shown: [left, right],
    };
  });
})()"""
)

# The attribute keys of the span details: where their lines break, when not at a boundary.
KEYS = (
    """(() => {
  const boundary = """
    + BOUNDARY
    + """;
  return [...document.querySelectorAll('#details-card .kv:not(.facts) th')].map((th) => {
    const bad = [];
    const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    let top = null;
    let seen = '';
    let lines = 0;
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      for (let i = 0; i < n.data.length; i++) {
        const r = document.createRange();
        r.setStart(n, i);
        r.setEnd(n, i + 1);
        const rect = r.getClientRects()[0];
        if (rect && (top === null || rect.top > top + 2)) lines += 1;
        const rest = n.data.slice(i);
        if (rect && top !== null && rect.top > top + 2 && !boundary(seen, rest)) bad.push(`${seen}|${rest}`);
        if (rect) top = rect.top;
        seen += n.data[i];
      }
    }
    return {key: th.textContent, title: th.title, bad, lines};
  });
})()"""
)


def handoff_chain(trace_id: str, visits: list[str], *, start_ns: int, service: str = "support-desk") -> Any:
    """One request whose agents take turns in ``visits`` order, each turn handed on by a handoff
    span under the agent before (so the agent spans nest ever deeper, as the demo's ping-pong
    does); every agent asks a model and the last one runs a tool."""
    spans: list[Any] = []
    ids = iter(range(1, 10_000))
    end = start_ns + 60 * len(visits) * MS

    def add(parent: str | None, name: str, start: int, attrs: dict[str, Any], stop: int | None = None) -> str:
        span_id = f"{next(ids):016x}"
        span = {
            "traceId": trace_id,
            "spanId": span_id,
            "name": name,
            "kind": 1,
            "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(stop if stop is not None else end - len(spans) * MS),
            "attributes": attributes(attrs),
            "status": {"code": 1},
        }
        if parent is not None:
            span["parentSpanId"] = parent
        spans.append(span)
        return span_id

    parent = add(None, "invoke_workflow trip_planner", start_ns, {sc.GEN_AI_OPERATION_NAME: sc.OP_WORKFLOW})
    t = start_ns + MS
    for hop, agent in enumerate(visits):
        run = add(
            parent,
            f"invoke_agent {agent}",
            t,
            {sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT, sc.GEN_AI_AGENT_NAME: agent},
        )
        add(
            run,
            "chat planner-model",
            t + MS,
            {
                sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
                sc.GEN_AI_REQUEST_MODEL: "planner-model",
                sc.GEN_AI_USAGE_INPUT_TOKENS: 120 + hop,
                sc.GEN_AI_USAGE_OUTPUT_TOKENS: 30,
            },
            t + 36 * MS,
        )
        t += 40 * MS
        if hop == len(visits) - 1:
            add(
                run,
                "execute_tool get_forecast",
                t,
                {sc.GEN_AI_OPERATION_NAME: sc.OP_TOOL, sc.GEN_AI_TOOL_NAME: "get_forecast"},
                t + 20 * MS,
            )
            break
        target = visits[hop + 1]
        parent = add(
            run,
            f"handoff {target}",
            t,
            {
                sc.GEN_AI_OPERATION_NAME: sc.OP_HANDOFF,
                sc.REACH_HANDOFF_SOURCE: agent,
                sc.REACH_HANDOFF_TARGET: target,
                sc.REACH_HANDOFF_STATUS: "committed",
                sc.REACH_HOP_COUNT: hop + 1,
            },
        )
        t += MS
    return request(spans, service=service)


SUPERVISOR = ["supervisor", "budget_agent", "supervisor", "weather_agent", "supervisor"]
PING_PONG = ["TriageAgent", "BillingAgent"] * 4  # the demo's ping-pong request


@pytest.fixture(scope="module")
def traffic(start_console: Any) -> tuple[Console, dict[str, str]]:
    """A collector holding the demo's kinds of request and the supervisor's, a minute old."""
    console = start_console()
    start = time.time_ns() - 60_000_000_000
    traces = {}
    for seed in (1, 2, 3):
        body, info = agent_trace(40, seed=seed, start_ns=start + seed * 1_000 * MS)
        post(console.url, body)
        traces[f"desk-{seed}"] = info.trace_id
    for name, visits, trace_id in (
        ("ping-pong", PING_PONG, "9a9e" + "ab" * 14),
        ("supervisor", SUPERVISOR, "5e1f" + "cd" * 14),
    ):
        post(console.url, handoff_chain(trace_id, visits, start_ns=start, service="trip-planner"))
        traces[name] = trace_id
    return console, traces


def _stand_in(console: Console, topology: Any) -> None:
    from fastapi import APIRouter

    stand_in = APIRouter()
    stand_in.add_api_route("/api/topology", lambda window: topology, methods=["GET"])
    console.app.router.routes[:0] = stand_in.routes


def _edge(source: str, target: str, handoffs: int, committed: int, loops: int = 0) -> Any:
    return {
        "source": source,
        "target": target,
        "mode": "delegate",
        "handoffs": handoffs,
        "committed": committed,
        "failed": handoffs - committed,
        "rejected": 0,
        "unknown": 0,
        "inferred": 0,
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
    # A supervisor and workers that hand back to it; one more worker it never hears back from.
    "supervisor": _topology(
        ["supervisor", "budget_agent", "weather_agent", "hotel_agent"],
        [
            _edge("supervisor", "budget_agent", 5, 5),
            _edge("budget_agent", "supervisor", 5, 5),
            _edge("supervisor", "weather_agent", 5, 4),
            _edge("weather_agent", "supervisor", 4, 4),
            _edge("supervisor", "hotel_agent", 3, 3),
            _edge("supervisor", "supervisor", 2, 2, 2),
        ],
    ),
    # The same with a worker that passes on to a third, who hands back to the supervisor: the
    # return budget_agent → supervisor must not be drawn through research_agent.
    "supervisor-chain": _topology(
        ["supervisor", "budget_agent", "weather_agent", "research_agent"],
        [
            _edge("supervisor", "budget_agent", 5, 5),
            _edge("budget_agent", "supervisor", 5, 5),
            _edge("supervisor", "weather_agent", 5, 5),
            _edge("weather_agent", "supervisor", 5, 5),
            _edge("weather_agent", "research_agent", 3, 3),
            _edge("research_agent", "supervisor", 3, 3),
        ],
    ),
    # The demo's support desk over an hour, with the hand-offs between workers it makes.
    "support-desk": _topology(
        ["TriageAgent", *WORKERS],
        [
            _edge("TriageAgent", "BillingAgent", 556, 423, 36),
            _edge("TriageAgent", "TechSupportAgent", 382, 352),
            _edge("TriageAgent", "RefundAgent", 348, 317),
            _edge("TriageAgent", "WriterAgent", 348, 314),
            _edge("BillingAgent", "TechSupportAgent", 44, 39, 44),
            _edge("TechSupportAgent", "RefundAgent", 44, 39, 44),
            _edge("RefundAgent", "WriterAgent", 44, 41, 44),
            _edge("BillingAgent", "WriterAgent", 43, 39, 43),
            _edge("BillingAgent", "TriageAgent", 36, 36, 36),
            _edge("WriterAgent", "TriageAgent", 30, 20),
        ],
    ),
    # Handoffs both ways between every pair of four agents.
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


def _graph(page: Page, svg_id: str) -> dict[str, Any]:
    result = page.js(f"{GRAPH}({svg_id!r})")
    assert not result.get("missing"), svg_id
    return result


@pytest.mark.parametrize("name", list(TOPOLOGIES))
def test_topology_edges_keep_off_other_agents_and_labels_sit_on_their_edges(
    start_console: Any, page: Page, name: str
) -> None:
    topology = TOPOLOGIES[name]
    console = start_console()
    _stand_in(console, topology)
    goto_ready(page, console.url + "/ui/topology")
    assert page.events.errors == []
    result = _graph(page, "topology-graph")
    assert result["edges"] == result["labels"] == len(topology["edges"])
    assert result["found"] == []


def test_topology_of_the_demo_and_the_supervisor_traffic(traffic: Any, page: Page) -> None:
    console, _ = traffic
    goto_ready(page, console.url + "/ui/topology?window=1h")
    assert page.events.errors == []
    result = _graph(page, "topology-graph")
    api = console.api("/api/topology", window="1h")
    assert result["nodes"] == len(api["nodes"]) and result["edges"] == len(api["edges"])
    assert {("supervisor", "budget_agent"), ("budget_agent", "supervisor")} <= {
        (e["source"], e["target"]) for e in api["edges"]
    }
    assert result["found"] == []


@pytest.mark.parametrize("name", ["desk-1", "desk-2", "desk-3", "ping-pong", "supervisor"])
def test_trace_graph_edges_keep_off_other_agents_and_labels_sit_on_their_edges(
    traffic: Any, page: Page, name: str
) -> None:
    console, traces = traffic
    goto_ready(page, f"{console.url}/ui/trace/{traces[name]}")
    assert page.events.errors == []
    result = _graph(page, "agent-graph")
    assert result["edges"] == result["labels"] >= 1
    assert result["found"] == []


@pytest.mark.parametrize("name", ["desk-1", "ping-pong", "supervisor"])
def test_timeline_text_beside_its_bar_and_names_whole(traffic: Any, page: Page, name: str) -> None:
    console, traces = traffic
    goto_ready(page, f"{console.url}/ui/trace/{traces[name]}")
    page.wait_for("document.querySelectorAll('.wf-row:not([hidden])').length > 3")
    rows = page.js(TIMELINE)
    spans = console.api(f"/api/traces/{traces[name]}", tree="false")["spans"]
    assert len(rows) == len(spans)
    names = {s["span_id"]: s["name"] for s in spans}
    found = []
    for row in rows:
        where = f"{row['name']!r} ({row['text']!r})"
        (bar_left, bar_right), (left, right) = row["bar"], row["shown"]
        if right - left < 20:
            found.append(f"{where}: its text is not shown")
        if not (right <= bar_left + 0.5 or left >= bar_right - 0.5):
            found.append(
                f"{where}: text at {left:.0f}–{right:.0f} over its bar at {bar_left:.0f}–{bar_right:.0f}"
            )
        # The name: all of it, broken only at a word, dot or underscore boundary.
        assert row["name"] == names[row["span"]]
        found.extend(f"{where}: the name breaks inside a word at {b!r}" for b in row["breaks"])
        if not row["whole"]:
            found.append(f"{where}: the name is cut")
    assert found == []
    # Whole on hover: the name and the text beside the bar (shortened where neither side had room).
    for row in rows:
        assert row["title"].startswith(row["name"]) and row["hover"].startswith(row["text"]), row


def test_attribute_keys_wrap_at_dots_and_underscores(traffic: Any, page: Page) -> None:
    console, traces = traffic
    goto_ready(page, f"{console.url}/ui/trace/{traces['supervisor']}")
    page.wait_for("!!document.querySelector('.wf-row.t-llm')")
    page.click(".wf-row.t-llm")
    page.wait_for("document.querySelectorAll('#details-card .kv:not(.facts) th').length > 3")
    keys = page.js(KEYS)
    assert sc.GEN_AI_USAGE_INPUT_TOKENS in [k["key"] for k in keys]
    wrapped = [k for k in keys if k["lines"] > 1]
    assert wrapped, "no key long enough to wrap in the details panel"
    assert [(k["key"], k["bad"]) for k in keys if k["bad"]] == []
    assert all(k["title"] == k["key"] for k in keys)  # the whole key on hover

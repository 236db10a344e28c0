// Topology: the agents and the handoffs between them over a window (GET /api/topology, SPEC §15):
// a graph and a table of edges. A collector without the endpoint gets a message saying so.

import { ApiError, get } from "../api.js";
import { AgentColors } from "../colors.js";
import { clear, h, notice } from "../dom.js";
import * as fmt from "../format.js";
import { agentGraph } from "../trace/graph.js";
import { agentChip } from "./traces.js";

const WINDOWS = ["15m", "1h", "6h", "24h"];

async function fromTopology(windowParam, signal) {
  try {
    return await get("/api/topology", { window: windowParam }, signal);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return null;
    throw e;
  }
}

function statusesOf(e) {
  if (e.statuses) return e.statuses;
  const out = {};
  for (const k of ["committed", "failed", "rejected", "unknown"]) if (e[k]) out[k] = e[k];
  return out;
}

export async function render(root, ctx) {
  document.title = "Topology · reach-otel";
  const windowParam = WINDOWS.includes(ctx.params.get("window")) ? ctx.params.get("window") : "1h";
  const select = h("select", { id: "window", "aria-label": "window" }, WINDOWS.map((w) => h("option", { value: w, selected: w === windowParam, text: `last ${w}` })));
  select.addEventListener("change", () => ctx.navigate(`/ui/topology?window=${select.value}`, { replace: true }));
  const body = h("div", { id: "topology-body", class: "stack" });
  root.append(h("div", { class: "page-head" }, h("h1", { text: "Topology" }), select), body);

  const data = await fromTopology(windowParam, ctx.signal);
  if (data === null) {
    const missing = notice("The topology endpoint (/api/topology) is not available on this collector.", "warn");
    missing.id = "topology-missing";
    body.append(missing);
    return null;
  }
  const nodes = data.nodes || [];
  const edges = data.edges || [];
  const colors = new AgentColors(nodes.map((v) => v.agent));
  clear(body);
  if (!nodes.length) {
    body.append(notice(`No agents in the last ${windowParam}.`));
    return null;
  }
  const graph = agentGraph(
    nodes.map((v) => ({
      id: String(v.agent),
      color: colors.get(v.agent),
      error: Boolean(v.errors),
      sub: [v.calls !== null && v.calls !== undefined ? `${fmt.int(v.calls)} call${Number(v.calls) === 1 ? "" : "s"}` : null, v.errors ? `${fmt.int(v.errors)} err` : null, v.p95_ms ? `p95 ${fmt.duration(v.p95_ms)}` : null].filter(Boolean).join(" · "),
    })),
    edges.map((e) => {
      const statuses = statusesOf(e);
      const total = e.handoffs ?? Object.values(statuses).reduce((a, b) => a + b, 0);
      const committed = statuses.committed || 0;
      return {
        source: String(e.source),
        target: String(e.target),
        count: total,
        statuses,
        dashed: Boolean(e.inferred) && e.inferred === total,
        loop: Boolean(e.loops),
        label: `×${fmt.int(total)} · ${fmt.pct(total ? committed / total : null)} ok`,
        title: `${fmt.int(total)} handoffs, ${Object.entries(statuses).map(([k, c]) => `${c} ${k}`).join(", ")}${e.inferred ? ` (${e.inferred} inferred)` : ""}${e.p95_ms ? `; p95 ${fmt.duration(e.p95_ms)}` : ""}${e.loops ? `; ${e.loops} in loops` : ""}`,
      };
    }),
    { id: "topology-graph", title: "agent topology" },
  );
  const edgeRows = edges.map((e) => {
    const st = statusesOf(e);
    return h(
      "tr",
      null,
      h("td", null, agentChip(e.source, colors)),
      h("td", null, agentChip(e.target, colors)),
      h("td", { class: "num" }, fmt.int(e.handoffs)),
      ["committed", "failed", "rejected", "unknown"].map((k) => h("td", { class: "num" }, fmt.int(st[k] || 0))),
      h("td", { class: "num", "data-col": "resolved" }, e.resolved === undefined || e.resolved === null ? "–" : fmt.int(e.resolved)),
      h("td", { class: "num" }, fmt.int(e.inferred || 0)),
      h("td", { class: "num" }, fmt.int(e.loops || 0)),
      h("td", { class: "num" }, e.p95_ms === undefined || e.p95_ms === null ? "–" : fmt.duration(e.p95_ms)),
    );
  });
  body.append(
    h("section", { class: "card graph-card wide" }, h("h2", { text: "Agents and handoffs" }), graph),
    h(
      "section",
      { class: "card" },
      h("h2", { text: "Edges" }),
      edgeRows.length
        ? h("table", { class: "grid", id: "edges" }, h("thead", null, h("tr", null, ["From", "To", "Handoffs", "Committed", "Failed", "Rejected", "Unknown", "Resolved", "Inferred", "Loops", "p95"].map((t) => h("th", { scope: "col", text: t, title: t === "Resolved" ? "handoffs whose trace (or conversation) an evaluation judged good" : null })))), h("tbody", null, edgeRows))
        : notice("No handoffs seen."),
    ),
  );
  return null;
}

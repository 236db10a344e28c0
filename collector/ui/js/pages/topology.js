// Topology: the agents and the handoffs between them over a window. GET /api/topology (SPEC §15)
// where the collector has it; otherwise the agents of /api/metrics/golden and /api/metrics/agents,
// with the handoffs of the most recent traces (said so on the page).

import { ApiError, get } from "../api.js";
import { AgentColors } from "../colors.js";
import { clear, h, notice } from "../dom.js";
import * as fmt from "../format.js";
import { agentGraph } from "../trace/graph.js";
import { buildModel } from "../trace/model.js";
import { agentChip } from "./traces.js";

const WINDOWS = ["15m", "1h", "6h", "24h"];
const SAMPLE = 20;

async function fromTopology(windowParam, signal) {
  try {
    return await get("/api/topology", { window: windowParam }, signal);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return null;
    throw e;
  }
}

async function fromMetrics(windowParam, signal) {
  const [golden, multi, recent] = await Promise.all([
    get("/api/metrics/golden", { window: windowParam, by: "agent" }, signal),
    get("/api/metrics/agents", { window: windowParam }, signal),
    get("/api/traces", { since: windowParam, limit: SAMPLE }, signal),
  ]);
  const nodes = new Map();
  for (const g of golden?.groups || []) {
    if (g.key === null || g.key === undefined) continue;
    nodes.set(String(g.key), { agent: String(g.key), calls: g.calls, errors: g.errors, p95_ms: g.p95_ms });
  }
  for (const a of multi?.agents || []) {
    const v = nodes.get(String(a.agent)) || { agent: String(a.agent), calls: 0, errors: 0, p95_ms: null };
    Object.assign(v, { input_tokens: a.input_tokens, output_tokens: a.output_tokens, cost_usd: a.cost_usd });
    nodes.set(v.agent, v);
  }
  const edges = new Map();
  const ids = (recent?.traces || []).filter((t) => t.hops > 0).map((t) => t.trace_id);
  for (let i = 0; i < ids.length; i += 4) {
    const traces = await Promise.all(ids.slice(i, i + 4).map((id) => get(`/api/traces/${encodeURIComponent(id)}`, null, signal)));
    for (const t of traces) {
      for (const e of buildModel(t).graph.edges) {
        const key = `${e.source}\u0000${e.target}`;
        const x = edges.get(key) || { source: e.source, target: e.target, handoffs: 0, statuses: {}, inferred: 0, loops: 0 };
        x.handoffs += e.count;
        x.inferred += e.inferred;
        x.loops += e.loop ? 1 : 0;
        for (const [k, c] of Object.entries(e.statuses)) x.statuses[k] = (x.statuses[k] || 0) + c;
        edges.set(key, x);
        for (const name of [e.source, e.target]) if (!nodes.has(name)) nodes.set(name, { agent: name, calls: null, errors: null, p95_ms: null });
      }
    }
  }
  return { nodes: [...nodes.values()], edges: [...edges.values()], sampled: ids.length };
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

  let data = await fromTopology(windowParam, ctx.signal);
  let source = null;
  if (data === null) {
    data = await fromMetrics(windowParam, ctx.signal);
    source = notice(
      `The topology endpoint (/api/topology) is not available on this collector. Shown instead: the agents of /api/metrics/golden and /api/metrics/agents over the last ${windowParam}, and the handoffs of the ${data.sampled} most recent traces with handoffs.`,
      "warn",
    );
    source.id = "topology-fallback";
  }
  const nodes = data.nodes || [];
  const edges = data.edges || [];
  const colors = new AgentColors(nodes.map((v) => v.agent));
  clear(body);
  if (source) body.append(source);
  if (!nodes.length) {
    body.append(notice(`No agents in the last ${windowParam}.`));
    return null;
  }
  const graph = agentGraph(
    nodes.map((v) => ({
      id: String(v.agent),
      color: colors.get(v.agent),
      error: Boolean(v.errors),
      sub: [v.calls !== null && v.calls !== undefined ? `${fmt.int(v.calls)} calls` : null, v.errors ? `${fmt.int(v.errors)} err` : null, v.p95_ms ? `p95 ${fmt.duration(v.p95_ms)}` : null].filter(Boolean).join(" · "),
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
        label: `×${fmt.int(total)} · ${fmt.pct(total ? committed / total : null)} committed${e.p95_ms ? ` · p95 ${fmt.duration(e.p95_ms)}` : ""}`,
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
      h("td", { class: "num" }, fmt.int(e.inferred || 0)),
      h("td", { class: "num" }, fmt.int(e.loops || 0)),
    );
  });
  body.append(
    h("section", { class: "card graph-card wide" }, h("h2", { text: "Agents and handoffs" }), graph),
    h(
      "section",
      { class: "card" },
      h("h2", { text: "Edges" }),
      edgeRows.length
        ? h("table", { class: "grid", id: "edges" }, h("thead", null, h("tr", null, ["From", "To", "Handoffs", "Committed", "Failed", "Rejected", "Unknown", "Inferred", "Loops"].map((t) => h("th", { scope: "col", text: t })))), h("tbody", null, edgeRows))
        : notice("No handoffs seen."),
    ),
  );
  return null;
}

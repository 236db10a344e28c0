// Trace: the waterfall of every span (virtualised), the trace's agent graph, its totals, the
// details of the chosen span and, for a failed trace, its cause (where the failure began, the path
// to it marked in the waterfall). GET /api/traces/{id}?tree=false (the spans, each with its place in
// the collector's span tree: the nested roots are not needed), then GET /api/traces/{id}/cause.

import { ApiError, get } from "../api.js";
import { AgentColors } from "../colors.js";
import { copyButton, h, notice } from "../dom.js";
import * as fmt from "../format.js";
import * as n from "../names.js";
import { tally } from "../evaluations.js";
import { causeLine } from "../trace/cause.js";
import { details } from "../trace/details.js";
import { agentGraph, OUTCOME_COLORS } from "../trace/graph.js";
import { buildModel, TYPES } from "../trace/model.js";
import { Waterfall } from "../trace/waterfall.js";

function tile(label, value, kind = "") {
  return h("div", { class: `tile ${kind}` }, h("div", { class: "tile-value", text: value }), h("div", { class: "tile-label", text: label }));
}

function totalsStrip(model) {
  const t = model.totals;
  return h(
    "div",
    { class: "tiles", id: "totals" },
    tile("duration", fmt.duration(model.durationMs)),
    tile("spans", fmt.int(t.spans)),
    tile("agents", fmt.int(model.agents.length)),
    tile("handoffs", fmt.int(t.handoffs)),
    tile("LLM calls", fmt.int(t.llm)),
    tile("tool calls", fmt.int(t.tools)),
    tile("tokens in → out", `${fmt.int(t.inputTokens)} → ${fmt.int(t.outputTokens)}`),
    tile("errors", fmt.int(t.errors), t.errors ? "bad" : ""),
    evaluationsTile(model),
    tile("gates", fmt.int(t.gates), t.gates ? "warn" : ""),
    tile("loops", fmt.int(t.loops), t.loops ? "bad" : ""),
  );
}

/** The trace's evaluations, good and bad (evaluations.js says which is which). */
function evaluationsTile(model) {
  const t = tally(model.rows.flatMap((r) => r.span.evaluations || []));
  const el = tile("evaluations good / bad", t.total ? "" : "0");
  if (t.total) {
    // A zero is grey, so the colour says at a glance which kind of verdict there is.
    el.firstChild.append(h("span", { class: t.good ? "ev-good" : "muted", text: `✓ ${fmt.int(t.good)}` }), " ", h("span", { class: t.bad ? "ev-bad" : "muted", text: `✗ ${fmt.int(t.bad)}` }));
    if (t.none) el.firstChild.append(h("span", { class: "muted", text: ` • ${fmt.int(t.none)}` }));
  }
  el.id = "evaluations-total";
  el.title = t.total ? `${t.total} evaluation(s): ${t.good} good, ${t.bad} bad${t.none ? `, ${t.none} with no verdict` : ""}` : "no evaluations on this trace";
  Object.assign(el.dataset, { good: String(t.good), bad: String(t.bad), total: String(t.total) });
  return el;
}

/** A link to the conversation (session) this trace is a turn of, when its spans name one. */
function conversationLink(model) {
  const id = model.rows.map((r) => r.span.attributes?.[n.GEN_AI_CONVERSATION_ID]).find((v) => typeof v === "string" && v.trim() !== "");
  if (!id) return null;
  return h("a", { href: `/ui/conversations/${encodeURIComponent(id)}`, class: "conv-link", id: "conversation-link", title: `the other turns of conversation ${id}` }, "conversation ", h("span", { class: "mono", text: id }));
}

function legend(model, colors, failed) {
  const agents = model.agents.map((a) => {
    const chip = h("span", { class: "chip", "data-agent": a }, h("span", { class: "dot" }), a);
    chip.firstChild.style.backgroundColor = colors.get(a);
    return chip;
  });
  const types = ["agent", "llm", "tool", "handoff"].map((k) =>
    h("span", { class: `legend-type t-${k}` }, h("span", { class: "ticon", text: TYPES[k].icon }), h("span", { class: "swatch" }), TYPES[k].label),
  );
  const outcomes = ["committed", "failed", "rejected", "unknown"].map((k) => {
    const line = h("span", { class: "line" });
    line.style.backgroundColor = OUTCOME_COLORS[k];
    return h("span", { class: "legend-outcome" }, line, k);
  });
  return h(
    "div",
    { class: "legend", id: "legend" },
    h("span", { class: "legend-title", text: "Agents" }),
    agents.length ? agents : h("span", { class: "muted", text: "none" }),
    h("span", { class: "sep" }),
    types,
    h("span", { class: "legend-mark error", text: "✗ error" }),
    h("span", { class: "legend-mark gate", text: "⚠ gate" }),
    h("span", { class: "legend-mark loop", text: "⟳ loop" }),
    h(
      "span",
      { class: "legend-mark eval", title: "an evaluation judged good (label correct, good, pass, positive, resolved or yes; with no label, score ≥ 0.5) or bad" },
      h("span", { class: "ev-good", text: "✓" }),
      h("span", { class: "ev-bad", text: "✗" }),
      " evaluation",
    ),
    failed ? h("span", { class: "legend-mark path", title: "the spans from the root down to where the failure began", text: "failure path" }) : null,
    h("span", { class: "sep" }),
    h("span", { class: "legend-title", text: "Handoffs" }),
    outcomes,
    h("span", { class: "legend-outcome" }, h("span", { class: "line dashed" }), "inferred"),
  );
}

/** An edge's short label (counts and the outcomes that were not commits) and its full title. */
export function edgeText(e) {
  const hops = e.hops.length ? (Math.min(...e.hops) === Math.max(...e.hops) ? `hop ${e.hops[0]}` : `hops ${Math.min(...e.hops)}–${Math.max(...e.hops)}`) : "";
  const outcomes = Object.entries(e.statuses).sort(([a], [b]) => (a === "committed" ? -1 : b === "committed" ? 1 : a.localeCompare(b)));
  const title = `${e.count} handoff${e.count === 1 ? "" : "s"}: ${outcomes.map(([k, c]) => `${c} ${k}`).join(", ")}${hops ? `; ${hops}` : ""}${e.inferred ? `; ${e.inferred} inferred` : ""}`;
  if (e.count === 1) return { label: [outcomes[0]?.[0] ?? "unknown", hops].filter(Boolean).join(" · "), title };
  const bad = outcomes.filter(([k]) => k !== "committed").map(([k, c]) => `${c} ${k}`);
  return { label: [`×${e.count}`, ...(bad.length ? bad : ["all committed"])].join(" · "), title };
}

function graphFor(model, colors, select) {
  const g = model.graph;
  if (!g.nodes.length) return h("p", { class: "muted", text: "No agents in this trace." });
  const nodes = g.nodes.map((v) => {
    const tokens = v.inputTokens + v.outputTokens;
    return {
      id: v.id,
      color: colors.get(v.id),
      error: v.errors > 0,
      title: `${v.id}: ${v.runs} run(s), ${v.errors} failed, ${fmt.int(v.inputTokens)} → ${fmt.int(v.outputTokens)} tokens`,
      sub: [`${v.runs} run${v.runs === 1 ? "" : "s"}`, v.errors ? `${v.errors} failed` : null, tokens ? `${fmt.compact(tokens)} tok` : null].filter(Boolean).join(" · "),
    };
  });
  const edges = g.edges.map((e) => ({ ...e, dashed: e.inferred * 2 >= e.count, ...edgeText(e) }));
  // A click on an agent opens its first run; on a handoff, its first handoff span.
  const firstRun = (agent) => model.rows.findIndex((r) => r.type === "agent" && r.agent === agent);
  return agentGraph(nodes, edges, {
    title: `agents and handoffs of trace ${model.traceId}`,
    fit: { width: 416, height: 280 }, // the side panel (console.css .side)
    onNode: (v) => select(firstRun(v.id)),
    onEdge: (e) => select(e.rows[0] ?? -1),
  });
}

export async function render(root, ctx) {
  const id = String(ctx.id);
  document.title = `Trace ${id.slice(0, 8)} · reach-otel`;
  performance.clearMarks();
  performance.mark("trace-start");
  const trace = await get(`/api/traces/${encodeURIComponent(id)}`, { tree: "false" }, ctx.signal).catch((e) => {
    if (e.status === 404 || e.status === 400) return { missing: e.message };
    throw e;
  });
  performance.mark("trace-fetched");
  if (trace.missing) {
    root.append(h("div", { class: "page-head" }, h("h1", { text: "Trace" })), notice(trace.missing, "error"), h("p", null, h("a", { href: "/ui/traces", text: "← all traces" })));
    return null;
  }
  // The cause is asked for once the trace is here, so the two reads never compete for the store
  // and the trace is drawn first; its answer then marks the page.
  const why = get(`/api/traces/${encodeURIComponent(id)}/cause`, null, ctx.signal).catch((e) => {
    if (e instanceof ApiError) return null; // a collector that cannot tell the cause still shows the trace
    throw e;
  });
  const model = buildModel(trace);
  const colors = new AgentColors(model.agents);
  const root0 = model.rows[0]?.span;
  const panel = h("div", { class: "card details-card", id: "details-card" });
  let originId = null;
  const waterfall = new Waterfall(model, colors, (row) => {
    const note = originId !== null && row.span.span_id === originId ? h("div", { class: "notice error origin-note", text: "The trace's failure began at this span." }) : null;
    panel.replaceChildren(...[note, details(row, colors)].filter(Boolean));
    panel.scrollTop = 0;
    const q = new URLSearchParams(location.search);
    q.set("span", String(row.span.span_id));
    history.replaceState(null, "", `${location.pathname}?${q}`);
  });
  const strip = totalsStrip(model);
  const key = legend(model, colors, false);
  root.append(
    h(
      "div",
      { class: "page-head" },
      h("a", { href: "/ui/traces", class: "back", text: "← Traces" }),
      h("h1", null, "Trace ", h("span", { class: "mono trace-id", text: String(trace.trace_id) })),
      copyButton(String(trace.trace_id), "copy id"),
      h("span", { class: "root-name", title: "root span", text: String(root0?.name ?? "") }),
      h("span", { class: "muted", text: root0 ? `${fmt.time(root0.start_time)}` : "" }),
      conversationLink(model),
    ),
    strip,
    key,
    h(
      "div",
      { class: "trace-layout" },
      h("div", { class: "card wf-card" }, waterfall.el),
      h("div", { class: "side" }, h("div", { class: "card graph-card" }, h("h2", { text: "Agent graph" }), graphFor(model, colors, (i) => waterfall.select(i, { scroll: true }))), panel),
    ),
  );
  waterfall.relayout();
  const wanted = ctx.params.get("span");
  const start = Math.max(0, model.rows.findIndex((r) => r.span.span_id === wanted));
  if (model.rows.length) waterfall.select(start, { scroll: true });
  performance.mark("trace-drawn");
  document.body.dataset.traceReady = String(model.rows.length);
  waterfall.body.focus({ preventScroll: true });
  const cleanup = () => {
    waterfall.destroy();
    delete document.body.dataset.traceReady;
  };

  let cause = null;
  try {
    cause = await why;
  } finally {
    // Left while the cause was on its way: the shell has already stopped this page.
    if (ctx.signal.aborted) cleanup();
  }
  if (ctx.signal.aborted) return null;
  if (cause?.failed && cause.origin) {
    originId = String(cause.origin.span_id);
    const originRow = model.rows.findIndex((r) => r.span.span_id === originId);
    waterfall.markCause((cause.path || []).map(String), originId);
    strip.before(causeLine(cause, colors, () => waterfall.select(originRow, { scroll: true })));
    key.replaceWith(legend(model, colors, true));
    // No span asked for, none chosen since: show where the failure began.
    if (!wanted && waterfall.selected === start && originRow >= 0) waterfall.select(originRow, { scroll: true });
  }
  return cleanup;
}

// Causes in words (SPEC §17): a cause's kind and name as a reader says them, and the Causes panel —
// a window's causes (GET /api/causes) ranked, each with its share, where it began, the agents it
// reached, what it wasted and example traces. Every name comes from spans: it is text.

import { breakable, h, notice } from "./dom.js";
import * as fmt from "./format.js";
import { agentChip } from "./pages/traces.js";

const KINDS = {
  tool_error: "tool error",
  llm_error: "LLM error",
  agent_error: "agent error",
  handoff_rejected: "handoff rejected",
  handoff_failed: "handoff failed",
  handoff_expired: "handoff expired",
  loop: "handoff loop",
  hop_limit: "hop limit",
  span_error: "span error",
};

/** A cause's kind as a pill ("tool error"); unknown kinds as the API names them. */
export function kindPill(kind) {
  const known = Object.hasOwn(KINDS, kind);
  return h("span", { class: `pill kind${known ? ` kind-${kind}` : ""}`, text: known ? KINDS[kind] : String(kind ?? "?") });
}

/** The origin's name: a handoff's is its target ("→ Billing"); a tool's, a model's or an agent's as is. */
export function causeName(kind, name) {
  const text = name === null || name === undefined || name === "" ? "?" : String(name);
  return String(kind).startsWith("handoff") || kind === "loop" || kind === "hop_limit" ? `→ ${text}` : text;
}

/** Tokens, dollars and time a cause wasted: "1,340 tokens · $0.0130 · 1.85 s" ("12 ms · no tokens"
 * when it spent none). */
export function wasteText({ input_tokens: tin, output_tokens: tout, cost_usd: usd, duration_ms: ms }) {
  const time = fmt.duration(ms || 0);
  const tokens = (tin || 0) + (tout || 0);
  if (!tokens) return `${time} · no tokens`;
  const cost = usd === null || usd === undefined ? "unpriced" : fmt.usd(usd);
  return `${fmt.int(tokens)} tokens · ${cost} · ${time}`;
}

const TRACE_ID = /^[0-9a-f]{1,64}$/i;

/** Links to the console's trace page for ids that are trace ids (others are skipped). */
export function traceLinks(ids) {
  return (ids || [])
    .map(String)
    .filter((id) => TRACE_ID.test(id))
    .map((id) => h("a", { class: "mono trace-link", href: `/ui/trace/${id}`, title: `trace ${id}`, "data-trace-id": id, text: id.slice(0, 8) }));
}

function shareBar(ratio) {
  const bar = h("span", { class: "ratebar share" }, h("span", { class: "fill" }), h("span", { class: "txt", text: fmt.pct(ratio, 0) }));
  bar.firstChild.style.width = `${Math.max(0, Math.min(1, Number(ratio) || 0)) * 100}%`;
  return bar;
}

function chips(agents, colors) {
  return agents.length ? agents.map((a) => agentChip(a, colors)) : h("span", { class: "muted", text: "–" });
}

function wasted(c) {
  const tokens = (c.wasted_input_tokens || 0) + (c.wasted_output_tokens || 0);
  const usd = c.wasted_cost_usd;
  const cost = usd === null || usd === undefined ? h("span", { class: "muted", text: tokens ? "unpriced" : "–" }) : h(usd > 0 ? "strong" : "span", { text: fmt.usd(usd) });
  const rest = [tokens ? `${fmt.compact(tokens)} tok` : null, c.wasted_duration_ms ? fmt.duration(c.wasted_duration_ms) : null].filter(Boolean).join(" · ");
  return [cost, rest ? h("div", { class: "muted small", text: rest }) : null];
}

function row(c, colors) {
  const never = (c.never_ran || []).map((x) => [String(x.agent), Number(x.traces)]);
  const neverSet = new Set(never.map(([a]) => a));
  const reached = (c.affected_agents || []).map(String).filter((a) => !neverSet.has(a));
  return h(
    "tr",
    { class: "cause-row", "data-agent": String(c.agent ?? ""), "data-kind": String(c.kind ?? ""), "data-name": String(c.name ?? "") },
    h("td", null, shareBar(c.share)),
    h("td", { class: "num" }, fmt.int(c.traces)),
    h("td", null, c.agent ? agentChip(c.agent, colors) : h("span", { class: "muted", text: "–" })),
    h("td", { class: "cause" }, kindPill(c.kind), h("div", { class: "cause-name mono", title: String(c.name ?? "") }, breakable(causeName(c.kind, c.name)))),
    h("td", { class: "error-type mono", title: String(c.error_type ?? "") }, c.error_type ? breakable(String(c.error_type)) : h("span", { class: "muted", text: "–" })),
    h("td", null, chips((c.upstream || []).map(String), colors)),
    h(
      "td",
      { class: "affected" },
      chips(reached, colors),
      never.map(([a, n]) => h("div", { class: "never-ran", text: `${a} never ran in ${fmt.int(n)}\u00a0trace${n === 1 ? "" : "s"}` })),
    ),
    h("td", { class: "num nowrap" }, wasted(c)),
    h("td", { class: "examples" }, traceLinks(c.example_trace_ids)),
  );
}

const HEADINGS = ["Share", "Traces", "Agent", "Cause", "Error type", "Upstream", "Affected", "Wasted", "Example traces"];

/**
 * The Causes panel for one /api/causes answer: `agent` (when the answer is for one agent), the
 * `window` it covers, and `colors` (the page's AgentColors).
 */
export function causesCard(body, { window, agent = null, colors, id = null }) {
  const causes = body?.causes || [];
  const whose = agent ? `${agent}'s failed traces` : "failed traces";
  const card = h("section", { class: "card causes-card", id, "data-agent": agent ?? undefined });
  card.append(h("h2", { text: `Causes of ${whose} — last ${window}` }));
  if (!causes.length) {
    card.append(notice(agent ? `No failed traces through ${agent} in the last ${window}.` : `No failed traces in the last ${window}.`));
    return card;
  }
  const failed = Number(body.failed_traces) || 0;
  card.append(
    h(
      "p",
      { class: "causes-summary" },
      h("strong", { text: `${fmt.int(failed)} failed trace${failed === 1 ? "" : "s"}` }),
      body.sampled ? h("span", { class: "muted", text: ` (the newest ${fmt.int(body.max_traces ?? failed)})` }) : null,
      body.summary ? h("span", { class: "muted", text: ` · ${body.summary}` }) : null,
    ),
    h(
      "div",
      { class: "table-scroll" },
      h(
        "table",
        { class: "grid causes" },
        h("thead", null, h("tr", null, HEADINGS.map((t) => h("th", { scope: "col", class: t === "Traces" || t === "Wasted" ? "num" : null, text: t })))),
        h("tbody", null, causes.map((c) => row(c, colors))),
      ),
    ),
  );
  return card;
}

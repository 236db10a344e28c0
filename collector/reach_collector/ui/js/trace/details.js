// The span details panel: facts, the handoff, captured prompts and completions as a chat,
// events, links, attributes, resource. Every value is text.

import { breakable, copyButton, h, kvTable, valueNode } from "../dom.js";
import { describe, GLYPH, verdict } from "../evaluations.js";
import * as fmt from "../format.js";
import * as n from "../names.js";
import { messages, TYPES, tokens } from "./model.js";

const CHAT_KEYS = [n.GEN_AI_SYSTEM_INSTRUCTIONS, n.GEN_AI_INPUT_MESSAGES, n.GEN_AI_OUTPUT_MESSAGES];

function sorted(obj) {
  return Object.entries(obj && typeof obj === "object" ? obj : {}).sort(([a], [b]) => a.localeCompare(b));
}

function part(p) {
  if (p === null || typeof p !== "object") return h("div", { class: "part text", text: String(p) });
  const type = String(p.type ?? "");
  if (type === "text" || (type === "" && typeof p.content === "string")) {
    return h("div", { class: "part text", text: String(p.content ?? p.text ?? "") });
  }
  if (type === "tool_call") {
    const args = typeof p.arguments === "string" ? p.arguments : JSON.stringify(p.arguments ?? {}, null, 2);
    return h("div", { class: "part tool-call" }, h("div", { class: "part-head", text: `tool call · ${p.name ?? "?"}` }), h("pre", { text: args }));
  }
  if (type === "tool_call_response") {
    const result = typeof p.response === "string" ? p.response : JSON.stringify(p.response ?? p.result ?? null, null, 2);
    return h("div", { class: "part tool-result" }, h("div", { class: "part-head", text: "tool result" }), h("pre", { text: result }));
  }
  return h("div", { class: "part other" }, h("div", { class: "part-head", text: type || "part" }), h("pre", { text: JSON.stringify(p, null, 2) }));
}

/** System instructions: plain text, or JSON parts (or messages) as the GenAI conventions write them. */
function systemParts(value) {
  let v = value;
  if (typeof v === "string") {
    try {
      v = JSON.parse(v);
    } catch {
      return [{ type: "text", content: value }];
    }
  }
  const list = Array.isArray(v) ? v : [v];
  return list.flatMap((item) => {
    if (item && typeof item === "object" && "role" in item) return messages([item])[0].parts;
    return typeof item === "string" ? [{ type: "text", content: item }] : [item];
  });
}

function chat(attributes) {
  const bubbles = [];
  for (const key of CHAT_KEYS) {
    const value = attributes?.[key];
    if (value === undefined || value === null) continue;
    if (key === n.GEN_AI_SYSTEM_INSTRUCTIONS) {
      bubbles.push(h("div", { class: "bubble role-system" }, h("div", { class: "role", text: "system" }), systemParts(value).map(part)));
      continue;
    }
    for (const m of messages(value) || []) {
      const role = m.role === "text" ? (key === n.GEN_AI_OUTPUT_MESSAGES ? "assistant" : "user") : m.role;
      bubbles.push(
        h(
          "div",
          { class: `bubble role-${/^[a-z_]+$/.test(role) ? role : "other"}`, "data-key": key },
          h("div", { class: "role", text: m.finish ? `${role} · ${m.finish}` : role }),
          m.parts.map(part),
        ),
      );
    }
  }
  return bubbles.length ? h("div", { class: "chat", id: "chat" }, bubbles) : null;
}

function block(title, content, open = true) {
  const d = h("details", { class: "block", open }, h("summary", { text: title }), content);
  return d;
}

function eventList(span) {
  const start = Number(span.start_time_unix_nano);
  const items = (span.events || []).map((e) => {
    const kind =
      e.name === n.EVENT_GATE_TRIGGERED ? "gate" : e.name === n.EXCEPTION_EVENT ? "error" : e.name === n.EVENT_LOOP_DETECTED ? "loop" : "";
    return h(
      "li",
      { class: `event ${kind}` },
      h("div", { class: "event-head" }, h("span", { class: "event-name", text: String(e.name ?? "") }), h("span", { class: "muted", text: `+${fmt.duration((Number(e.time_unix_nano) - start) / 1e6)}` })),
      kvTable(sorted(e.attributes), "no attributes"),
    );
  });
  return items.length ? h("ul", { class: "events" }, items) : h("p", { class: "muted", text: "none" });
}

function linkList(span) {
  const items = (span.links || []).map((l) =>
    h(
      "li",
      null,
      /^[0-9a-f]{32}$/i.test(String(l.trace_id)) && l.trace_id !== span.trace_id
        ? h("a", { href: `/ui/trace/${l.trace_id}`, class: "mono", text: String(l.trace_id) })
        : h("span", { class: "mono", text: String(l.trace_id) }),
      h("span", { class: "mono muted", text: ` / ${l.span_id}` }),
      kvTable(sorted(l.attributes), ""),
    ),
  );
  return items.length ? h("ul", { class: "links" }, items) : h("p", { class: "muted", text: "none" });
}

/** A span's evaluations: verdict, name, label, score, time and the evaluator's explanation. */
function evaluationList(span) {
  const items = (span.evaluations || []).map((ev) => {
    const v = verdict(ev);
    const score = ev.score === null || ev.score === undefined ? null : Number(ev.score);
    return h(
      "li",
      { class: `evaluation ${v}`, "data-verdict": v, title: describe(ev) },
      h(
        "div",
        { class: "evaluation-head" },
        h("span", { class: `badge eval ${v}`, text: `${GLYPH[v]} ${v === "none" ? "no verdict" : v}` }),
        h("span", { class: "evaluation-name", text: String(ev.name ?? "evaluation") }),
        ev.label !== null && ev.label !== undefined ? h("span", { class: "pill evaluation-label", text: String(ev.label) }) : null,
        score !== null && Number.isFinite(score) ? h("span", { class: "evaluation-score", text: `score ${fmt.num(score, 3)}` }) : null,
        h("span", { class: "muted evaluation-time", text: fmt.time(ev.time) }),
      ),
      ev.explanation ? h("div", { class: "evaluation-explanation", text: String(ev.explanation) }) : null,
    );
  });
  return h("ul", { class: "evaluations", id: "evaluations" }, items);
}

/** The details of one row (see model.buildModel). */
export function details(row, colors) {
  const span = row.span;
  const status = span.status?.code || "UNSET";
  const agentChip = row.agent ? h("span", { class: "chip" }, h("span", { class: "dot" }), String(row.agent)) : null;
  if (agentChip) agentChip.firstChild.style.backgroundColor = colors.get(row.agent);
  const k = tokens(span);
  const facts = [
    ["span id", h("span", null, h("span", { class: "mono", text: String(span.span_id) }), " ", copyButton(String(span.span_id)))],
    ["parent", span.parent_span_id ? h("span", { class: "mono", text: String(span.parent_span_id) }) : "root"],
    ["type", `${TYPES[row.type].icon} ${TYPES[row.type].label}${span.operation ? ` (${span.operation})` : ""}`],
    ["service", String(span.service ?? "")],
    ["kind", String(span.kind ?? "")],
    ["start", `${fmt.time(span.start_time)} (+${fmt.duration(row.start)})`],
    ["duration", fmt.duration(span.duration_ms)],
  ];
  const model = span.attributes?.[n.GEN_AI_RESPONSE_MODEL] ?? span.attributes?.[n.GEN_AI_REQUEST_MODEL];
  if (model !== undefined) facts.push(["model", String(model)]);
  if (k.input !== null || k.output !== null) facts.push(["tokens", `${fmt.int(k.input || 0)} in → ${fmt.int(k.output || 0)} out`]);
  if (span.status?.message) facts.push(["status message", String(span.status.message)]);
  const factTable = h(
    "table",
    { class: "kv facts" },
    h("tbody", null, facts.map(([key, v]) => h("tr", null, h("th", { scope: "row", text: key }), h("td", null, v instanceof Node ? v : String(v))))),
  );
  let handoff = null;
  if (row.handoff) {
    const x = row.handoff;
    handoff = h(
      "div",
      { class: `handoff-box st-${/^[a-z_]+$/.test(String(x.status)) ? x.status : "unknown"}` },
      h("div", { class: "handoff-route" }, h("strong", { text: String(x.source ?? "?") }), " ⇢ ", h("strong", { text: String(x.target ?? "?") })),
      h(
        "div",
        { class: "muted" },
        [
          x.status ? `outcome ${x.status}${x.inferred ? " (inferred from the target's next agent span)" : ""}` : "no outcome",
          x.mode ? `mode ${x.mode}` : null,
          x.hop !== null ? `hop ${x.hop}` : null,
          x.loop ? "⟳ loop detected" : null,
        ]
          .filter(Boolean)
          .join(" · "),
      ),
    );
  }
  const attrs = sorted(span.attributes).filter(([key]) => !CHAT_KEYS.includes(key));
  const conversation = chat(span.attributes);
  return h(
    "div",
    { class: "details", id: "details", "data-span-id": String(span.span_id) },
    h(
      "div",
      { class: `details-head${status === "ERROR" ? " error" : ""}` },
      h("h2", { class: "details-name", title: String(span.name ?? "") }, breakable(String(span.name ?? ""))),
      h("div", { class: "details-sub" }, agentChip, h("span", { class: `pill st-${status.toLowerCase()}`, text: status })),
    ),
    row.markers.length
      ? h("div", { class: "marker-list" }, row.markers.map((m) => h("span", { class: `badge ${m.kind}`, text: `${m.kind === "error" ? "✗" : m.kind === "gate" ? "⚠ gate" : m.kind === "loop" ? "⟳" : "⤒"} ${m.text}` })))
      : null,
    handoff,
    (span.evaluations || []).length ? block(`Evaluations (${span.evaluations.length})`, evaluationList(span)) : null,
    conversation ? block("Conversation", conversation) : null,
    factTable,
    block(`Events (${(span.events || []).length})`, eventList(span), (span.events || []).length > 0),
    block(`Attributes (${attrs.length})`, kvTable(attrs)),
    (span.links || []).length ? block(`Links (${span.links.length})`, linkList(span)) : null,
    block("Resource", kvTable(sorted(span.resource)), false),
    span.scope ? block("Scope", valueNode(span.scope), false) : null,
  );
}

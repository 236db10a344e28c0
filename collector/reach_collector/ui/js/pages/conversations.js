// Conversations (SPEC §18): the traces that share a gen_ai.conversation.id, one row per
// conversation of a window with its totals (GET /api/conversations), and one conversation's turns —
// its traces in start order with their summaries, each a link to its trace (GET
// /api/conversations/{id}). /ui/conversations lists; /ui/conversations/{id} shows one.

import { ApiError, get } from "../api.js";
import { AgentColors } from "../colors.js";
import { copyButton, fill, h, notice } from "../dom.js";
import * as fmt from "../format.js";
import { agentChip } from "./traces.js";

const WINDOWS = ["15m", "1h", "6h", "24h", "7d"];
const DEFAULT_WINDOW = "24h";
const LIMIT = 200;
const REFRESH_MS = 15000;

function head(...columns) {
  return h("thead", null, h("tr", null, columns.map(([text, num]) => h("th", { scope: "col", class: num ? "num" : null, text }))));
}

function errorsCell(n) {
  return h("td", { class: "num" }, n ? h("span", { class: "pill error", text: `✗ ${fmt.int(n)}` }) : "0");
}

function when(value) {
  return h("td", { class: "when", title: fmt.ago(value) }, fmt.time(value));
}

export function conversationHref(id) {
  return `/ui/conversations/${encodeURIComponent(String(id))}`;
}

export async function render(root, ctx) {
  if (ctx.id !== undefined) return renderOne(root, ctx);
  document.title = "Conversations · reach-otel";
  const windowParam = WINDOWS.includes(ctx.params.get("window")) ? ctx.params.get("window") : DEFAULT_WINDOW;
  const select = h("select", { id: "window", "aria-label": "window" }, WINDOWS.map((w) => h("option", { value: w, selected: w === windowParam, text: `last ${w}` })));
  select.addEventListener("change", () => ctx.navigate(`/ui/conversations?${new URLSearchParams({ window: select.value })}`, { replace: true }));
  const body = h("div", { id: "conversations-body", class: "stack" });
  root.append(
    h("div", { class: "page-head" }, h("h1", { text: "Conversations" }), select, h("span", { class: "muted", id: "conversations-updated" })),
    h("p", { class: "muted intro", text: "Requests that share a conversation (session) id, gen_ai.conversation.id: each trace is a turn." }),
    body,
  );
  let lastKey = "";

  async function load() {
    const answer = await get("/api/conversations", { window: windowParam, limit: LIMIT }, ctx.signal);
    document.getElementById("conversations-updated").textContent = `updated ${new Date().toISOString().slice(11, 19)} UTC`;
    const list = Array.isArray(answer?.conversations) ? answer.conversations : [];
    const key = JSON.stringify(list);
    if (key === lastKey) return;
    lastKey = key;
    if (!list.length) {
      fill(body, notice(`No conversations in the last ${windowParam}. A request joins one when its spans carry gen_ai.conversation.id (a session in reach_otel).`));
      return;
    }
    const colors = new AgentColors(list.flatMap((c) => c.agents || []));
    const rows = list.map((c) => {
      const id = String(c.conversation_id);
      return h(
        "tr",
        { class: c.errors ? "has-error" : null, "data-conversation-id": id },
        h("td", { class: "id nowrap" }, h("a", { href: conversationHref(id), class: "mono", text: id })),
        h("td", { class: "num" }, fmt.int(c.traces)),
        h("td", { class: "agents" }, (c.agents || []).length ? c.agents.map((a) => agentChip(a, colors)) : h("span", { class: "muted", text: "–" })),
        h("td", { class: "num" }, fmt.int(c.handoffs)),
        h("td", { class: "num nowrap" }, `${fmt.int(c.input_tokens)} → ${fmt.int(c.output_tokens)}`),
        h("td", { class: "num" }, c.cost_usd === null || c.cost_usd === undefined ? h("span", { class: "muted", text: "–" }) : fmt.usd(c.cost_usd)),
        errorsCell(c.errors),
        h("td", { class: "num" }, fmt.int(c.evaluations)),
        when(c.first),
        when(c.last),
      );
    });
    fill(
      body,
      h(
        "section",
        { class: "card" },
        h("h2", { text: `${fmt.int(list.length)} conversation${list.length === 1 ? "" : "s"} active in the last ${windowParam}${list.length >= LIMIT ? ` (the ${LIMIT} most recent)` : ""}` }),
        h(
          "table",
          { class: "grid", id: "conversations" },
          head(["Conversation"], ["Turns", true], ["Agents"], ["Handoffs", true], ["Tokens in → out", true], ["Cost (USD)", true], ["Errors", true], ["Evaluations", true], ["First (UTC)"], ["Last (UTC)"]),
          h("tbody", null, rows),
        ),
      ),
    );
  }

  await load();
  ctx.every(REFRESH_MS, load);
  return null;
}

async function renderOne(root, ctx) {
  let id;
  try {
    id = decodeURIComponent(String(ctx.id));
  } catch {
    id = String(ctx.id);
  }
  document.title = `Conversation ${id.slice(0, 24)} · reach-otel`;
  const back = h("a", { href: "/ui/conversations", class: "back", text: "← Conversations" });
  const found = await get(`/api/conversations/${encodeURIComponent(id)}`, null, ctx.signal).catch((e) => {
    if (e instanceof ApiError && (e.status === 404 || e.status === 400)) return { missing: e.message };
    throw e;
  });
  if (found.missing) {
    root.append(h("div", { class: "page-head" }, back, h("h1", { text: "Conversation" })), notice(found.missing, "error"));
    return null;
  }
  const traces = Array.isArray(found?.traces) ? found.traces : [];
  const colors = new AgentColors(traces.flatMap((t) => t.agents || []));
  const agents = [...new Set(traces.flatMap((t) => (t.agents || []).map(String)))];
  const sum = (key) => traces.reduce((n, t) => n + (Number(t[key]) || 0), 0);
  const first = traces[0]?.start_time;
  const count = Number(found.trace_count ?? traces.length);
  const rows = traces.map((t, i) => {
    const tid = String(t.trace_id);
    const href = `/ui/trace/${encodeURIComponent(tid)}`;
    return h(
      "tr",
      { class: t.error_count ? "has-error" : null, "data-trace-id": tid },
      h("td", { class: "num", text: String(i + 1) }),
      when(t.start_time || t.start_time_unix_nano),
      h("td", { class: "name", title: String(t.root_name ?? "") }, h("a", { href, text: String(t.root_name ?? "(no root span)") })),
      h("td", { class: "id nowrap" }, h("a", { href, class: "mono", text: tid }), " ", copyButton(tid)),
      h("td", { class: "agents" }, (t.agents || []).map((a) => agentChip(a, colors))),
      h("td", { class: "num" }, fmt.duration(t.duration_ms)),
      h("td", { class: "num" }, fmt.int(t.span_count)),
      errorsCell(t.error_count),
      h("td", { class: "num" }, fmt.int(t.hops)),
    );
  });
  const tile = (label, value, kind = "") => h("div", { class: `tile ${kind}` }, h("div", { class: "tile-value", text: value }), h("div", { class: "tile-label", text: label }));
  root.append(
    h("div", { class: "page-head" }, back, h("h1", null, "Conversation ", h("span", { class: "mono", id: "conversation-id", text: id })), copyButton(id, "copy id"), h("span", { class: "muted", text: first ? `from ${fmt.time(first)}` : "" })),
    h(
      "div",
      { class: "tiles", id: "conversation-totals" },
      tile("turns", fmt.int(count)),
      tile("agents", fmt.int(agents.length)),
      tile("spans", fmt.int(sum("span_count"))),
      tile("errors", fmt.int(sum("error_count")), sum("error_count") ? "bad" : ""),
      tile("time in traces", fmt.duration(sum("duration_ms"))),
    ),
    h(
      "section",
      { class: "card" },
      h("h2", { text: `Turns in start order${traces.length < count ? ` (the first ${traces.length} of ${count})` : ""}` }),
      traces.length
        ? h("table", { class: "grid", id: "conversation-traces" }, head(["#", true], ["Start (UTC)"], ["Root span"], ["Trace"], ["Agents"], ["Duration", true], ["Spans", true], ["Errors", true], ["Hops", true]), h("tbody", null, rows))
        : notice("No traces in this conversation."),
    ),
  );
  return null;
}

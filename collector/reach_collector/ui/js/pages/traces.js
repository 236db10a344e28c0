// Traces: the search of SPEC §4 as a form, its query string the page's own (a search is a link),
// a table of trace summaries with copyable ids, refreshed live.

import { ApiError, get } from "../api.js";
import { AgentColors } from "../colors.js";
import { clear, copyButton, h, notice } from "../dom.js";
import * as fmt from "../format.js";

const FIELDS = ["service", "agent", "since", "until", "min_duration_ms"];
const LIMITS = ["20", "50", "100", "200", "500", "1000"];
const LIVE_MS = 5000;

/** The page's query string → the API's parameters (they are the same names, attr.KEY included). */
export function apiParams(params) {
  const out = new URLSearchParams();
  for (const [key, value] of params) {
    if (value === "") continue;
    if (FIELDS.includes(key) || key === "limit" || key.startsWith("attr.")) out.append(key, value);
    else if (key === "status" && value === "error") out.append(key, value);
  }
  return out;
}

function attrText(params) {
  return [...params]
    .filter(([k]) => k.startsWith("attr."))
    .map(([k, v]) => `${k.slice(5)}=${v}`)
    .join(" & ");
}

function field(name, label, value, attrs = {}) {
  const id = `f-${name}`;
  return h(
    "div",
    { class: "field" },
    h("label", { for: id, text: label }),
    h("input", { id, name, value: value ?? "", autocomplete: "off", spellcheck: "false", ...attrs }),
  );
}

export async function render(root, ctx) {
  document.title = "Traces · reach-otel";
  if (!ctx.params.has("since") || !ctx.params.has("limit")) {
    // The address always holds the search the table shows (the form's defaults included).
    const q = new URLSearchParams(ctx.params);
    if (!q.has("since")) q.set("since", "1h");
    if (!q.has("limit")) q.set("limit", "50");
    ctx.setQuery(q);
  }
  const p = ctx.params;
  const limit = h(
    "select",
    { id: "f-limit", name: "limit" },
    LIMITS.map((n) => h("option", { value: n, selected: (p.get("limit") || "50") === n, text: n })),
  );
  const errors = h("input", { id: "f-errors", type: "checkbox", name: "errors", checked: p.get("status") === "error" });
  const live = h("input", { id: "f-live", type: "checkbox", checked: p.get("live") !== "0" });
  const form = h(
    "form",
    { class: "search card", id: "search", autocomplete: "off" },
    field("service", "Service", p.get("service"), { placeholder: "any" }),
    field("agent", "Agent", p.get("agent"), { placeholder: "any" }),
    field("since", "Since", p.get("since"), { placeholder: "1h, 2026-01-05T09:00Z, blank: all" }),
    field("until", "Until", p.get("until"), { placeholder: "now" }),
    field("min_duration_ms", "Min duration (ms)", p.get("min_duration_ms"), { type: "number", min: "0", step: "any" }),
    field("attr", "Attribute", attrText(p), { placeholder: "key=value & key=value", class: "wide" }),
    h("div", { class: "field" }, h("label", { for: "f-limit", text: "Limit" }), limit),
    h("div", { class: "field check" }, errors, h("label", { for: "f-errors", text: "errors only" })),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary", text: "Search" })),
  );
  const status = h("span", { class: "muted", id: "traces-status" });
  const body = h("tbody", { id: "traces-body" });
  const table = h(
    "table",
    { class: "grid", id: "traces-table" },
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        ["Start (UTC)", "Trace id", "Root span", "Service", "Duration", "Spans", "Errors", "Hops", "Agents"].map((t) =>
          h("th", { scope: "col", text: t }),
        ),
      ),
    ),
    body,
  );
  const message = h("div", { id: "traces-message" });
  root.append(
    h("div", { class: "page-head" }, h("h1", { text: "Traces" }), h("div", { class: "live" }, live, h("label", { for: "f-live", text: `live (${LIVE_MS / 1000} s)` }), status)),
    form,
    message,
    h("div", { class: "card table-card" }, table),
  );

  function formParams() {
    const q = new URLSearchParams();
    const data = new FormData(form);
    for (const name of FIELDS) {
      const v = String(data.get(name) || "").trim();
      if (v || name === "since") q.set(name, v); // an empty since is kept: "all", not the default
    }
    for (const pair of String(data.get("attr") || "").split(/\s+&\s+|\s*\n\s*/)) {
      const i = pair.indexOf("=");
      if (i > 0) q.append(`attr.${pair.slice(0, i).trim()}`, pair.slice(i + 1).trim());
    }
    if (errors.checked) q.set("status", "error");
    q.set("limit", limit.value);
    if (!live.checked) q.set("live", "0");
    return q;
  }

  let lastKey = "";

  async function refresh() {
    const q = apiParams(ctx.params);
    const response = await fetchTraces(q, ctx.signal);
    clear(message);
    const key = JSON.stringify(response.traces);
    status.textContent = `updated ${new Date().toISOString().slice(11, 19)} UTC`;
    if (key === lastKey) return;
    lastKey = key;
    fill(body, response.traces);
    if (!response.traces.length) message.append(notice("No trace matches this search.", "info"));
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    ctx.setQuery(formParams());
    lastKey = "";
    ctx.run(async () => {
      try {
        await refresh();
      } catch (e) {
        if (!(e instanceof ApiError)) throw e;
        clear(message).append(notice(e.message, "error"));
      }
    });
  });
  live.addEventListener("change", () => ctx.setQuery(formParams()));

  await refresh();
  ctx.every(LIVE_MS, async () => {
    if (live.checked) await refresh();
  });
}

async function fetchTraces(q, signal) {
  const out = await get("/api/traces" + (q.toString() ? `?${q}` : ""), null, signal);
  return { traces: Array.isArray(out?.traces) ? out.traces : [] };
}

function fill(body, traces) {
  const colors = new AgentColors();
  const rows = traces.map((t) => {
    const id = String(t.trace_id);
    const href = `/ui/trace/${encodeURIComponent(id)}`;
    return h(
      "tr",
      { class: t.error_count ? "has-error" : null, "data-trace-id": id },
      h("td", { class: "nowrap", title: fmt.ago(t.start_time) }, fmt.time(t.start_time || t.start_time_unix_nano)),
      h("td", { class: "id nowrap" }, h("a", { href, class: "mono", text: id }), " ", copyButton(id)),
      h("td", { class: "name", title: t.root_name ?? "" }, h("a", { href, text: t.root_name ?? "(no root span)" })),
      h("td", { class: "service" }, (t.services || []).join(", ") || "–"),
      h("td", { class: "num" }, fmt.duration(t.duration_ms)),
      h("td", { class: "num" }, fmt.int(t.span_count)),
      h("td", { class: "num" }, t.error_count ? h("span", { class: "pill error", text: `✗ ${t.error_count}` }) : "0"),
      h("td", { class: "num" }, fmt.int(t.hops)),
      h("td", { class: "agents" }, (t.agents || []).map((a) => agentChip(a, colors))),
    );
  });
  clear(body).append(...rows);
}

export function agentChip(agent, colors) {
  const chip = h("span", { class: "chip", title: String(agent) }, h("span", { class: "dot" }), String(agent));
  chip.firstChild.style.backgroundColor = colors.get(agent);
  return chip;
}

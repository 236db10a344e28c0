// Alerts: pending, firing and resolved alerts (GET /api/alerts) with the cause a page carries (its
// `cause` sentence and `cause_traces`), an ack button for a firing alert (POST
// /api/alerts/{fingerprint}/ack with an empty body), the causes of each firing alert's agent over
// the page's window (GET /api/causes?agent=), and the delivery attempts (GET /api/alerts/deliveries).

import { ApiError, get, post } from "../api.js";
import { causesCard, traceLinks } from "../causes.js";
import { AgentColors } from "../colors.js";
import { fill, h, notice } from "../dom.js";
import * as fmt from "../format.js";

const STATES = ["all", "firing", "pending", "resolved"];
const WINDOWS = ["5m", "15m", "1h", "6h", "24h"];
const REFRESH_MS = 10000;
const MAX_PANELS = 6; // agents whose causes are shown at once

/** The cause an alert carries (SPEC §17): its sentence, and its example traces as links. */
function alertCause(a) {
  const text = a.annotations?.cause;
  if (!text) return null;
  const links = traceLinks(String(a.annotations?.cause_traces ?? "").split(",").map((t) => t.trim()).filter(Boolean));
  return h(
    "div",
    { class: "alert-cause" },
    h("div", { class: "cause-text" }, h("strong", { text: "Cause: " }), String(text)),
    links.length ? h("div", { class: "trace-links" }, h("span", { class: "muted", text: "example traces: " }), links) : null,
  );
}

/** The alert's failing traces in this console: its page's traces_url when the API gives one, else
 * the agent's error traces from an hour before the alert became active. */
function tracesLink(a) {
  let href = null;
  try {
    const url = new URL(String(a.annotations?.traces_url ?? ""));
    if (url.pathname === "/ui/traces") href = url.pathname + url.search;
  } catch {
    // none given, or not one of ours
  }
  const active = Date.parse(String(a.active_at ?? ""));
  if (!href && a.labels?.agent && !Number.isNaN(active)) {
    const since = new Date(active - 3600_000).toISOString().replace(/\.\d+Z$/, "Z");
    href = `/ui/traces?${new URLSearchParams({ agent: a.labels.agent, status: "error", since, limit: "50" })}`;
  }
  return href ? h("a", { href, class: "small failing-traces", text: "failing traces →" }) : null;
}

function labels(obj) {
  return Object.entries(obj || {})
    .filter(([k]) => k !== "alertname" && k !== "severity")
    .map(([k, v]) => h("span", { class: "label", text: `${k}=${v}` }));
}

/** A delivery's agent: the one its alerts share, else how many alerts a grouped message named. */
function deliveryAgent(d) {
  if (d.agent) return String(d.agent);
  const n = Array.isArray(d.fingerprints) ? d.fingerprints.length : 0;
  return n > 1 ? `${n} alerts` : "";
}

export async function render(root, ctx) {
  document.title = "Alerts · reach-otel";
  const state = STATES.includes(ctx.params.get("state")) ? ctx.params.get("state") : "all";
  const windowParam = WINDOWS.includes(ctx.params.get("window")) ? ctx.params.get("window") : "15m";
  const here = (st, w) => {
    const q = new URLSearchParams();
    if (st !== "all") q.set("state", st);
    if (w !== "15m") q.set("window", w);
    const text = q.toString();
    return `/ui/alerts${text ? `?${text}` : ""}`;
  };
  const tabs = h(
    "div",
    { class: "tabs", role: "tablist" },
    STATES.map((st) => h("a", { href: here(st, windowParam), class: st === state ? "active" : null, role: "tab", text: st })),
  );
  const select = h("select", { id: "window", "aria-label": "causes window", title: "the window of the causes shown" }, WINDOWS.map((w) => h("option", { value: w, selected: w === windowParam, text: `causes: last ${w}` })));
  select.addEventListener("change", () => ctx.navigate(here(state, select.value), { replace: true }));
  const alertsBox = h("div", { id: "alerts-body" });
  const causesBox = h("div", { id: "alert-causes", class: "stack" });
  const deliveriesBox = h("div", { id: "deliveries-body" });
  root.append(
    h("div", { class: "page-head" }, h("h1", { text: "Alerts" }), tabs, select),
    h("section", { class: "card" }, h("h2", { text: "Alerts" }), alertsBox),
    causesBox,
    h("section", { class: "card" }, h("h2", { text: "Delivery attempts (latest 100)" }), deliveriesBox),
  );

  async function ack(fingerprint, button) {
    button.disabled = true;
    button.textContent = "acking…";
    try {
      const done = await post(`/api/alerts/${encodeURIComponent(fingerprint)}/ack`, ctx.signal);
      button.textContent = done?.already_acknowledged ? "already acked" : "acked";
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      button.textContent = "ack failed";
      button.title = e.message;
      button.disabled = false;
      return;
    }
    await load();
  }

  async function load() {
    const [alerts, deliveries] = await Promise.all([
      get("/api/alerts", state === "all" ? null : { state }, ctx.signal),
      get("/api/alerts/deliveries", { limit: 100 }, ctx.signal),
    ]);
    const list = alerts?.alerts || [];
    // The agents of the firing alerts, P0 first: each gets its causes over the page's window.
    const burning = list.filter((a) => a.state === "firing" && a.labels?.agent);
    burning.sort((a, b) => String(a.severity).localeCompare(String(b.severity)));
    const agents = [...new Set(burning.map((a) => String(a.labels.agent)))].slice(0, MAX_PANELS);
    const causes = agents.length
      ? await Promise.all(
          agents.map((agent) =>
            get("/api/causes", { window: windowParam, agent }, ctx.signal).catch((e) => {
              if (e instanceof ApiError) return { error: e.message };
              throw e;
            }),
          ),
        )
      : [];
    const order = { firing: 0, pending: 1, resolved: 2 };
    list.sort((a, b) => (order[a.state] ?? 3) - (order[b.state] ?? 3) || String(a.severity).localeCompare(String(b.severity)));
    const rows = list.map((a) => {
      const canAck = a.state === "firing" && !a.acknowledged_by;
      const button = canAck ? h("button", { type: "button", class: "primary small ack", "data-fingerprint": String(a.fingerprint), text: "Ack" }) : null;
      if (button) button.addEventListener("click", () => ctx.run(() => ack(String(a.fingerprint), button)));
      return h(
        "tr",
        { class: `st-${a.state}`, "data-fingerprint": String(a.fingerprint) },
        h("td", null, h("span", { class: `pill sev-${String(a.severity).toLowerCase()}`, text: String(a.severity ?? "") })),
        h("td", { class: "alert-cell" }, h("div", { class: "alertname", text: String(a.alertname ?? "") }), h("div", { class: "muted small", text: String(a.annotations?.summary ?? "") }), alertCause(a), tracesLink(a)),
        h("td", null, labels(a.labels)),
        h("td", null, h("span", { class: `pill state-${a.state}`, text: String(a.state ?? "") })),
        h("td", { class: "nowrap", title: String(a.active_at ?? "") }, fmt.time(a.active_at)),
        h("td", { class: "nowrap" }, fmt.time(a.fired_at)),
        h("td", { class: "nowrap" }, fmt.time(a.resolved_at)),
        h("td", null, a.acknowledged_by ? h("span", { class: "muted", text: `acked by ${a.acknowledged_by}` }) : button),
      );
    });
    fill(alertsBox, 
      rows.length
        ? h("table", { class: "grid", id: "alerts" }, h("thead", null, h("tr", null, ["Severity", "Alert", "Labels", "State", "Active since", "Fired", "Resolved", "Ack"].map((t) => h("th", { scope: "col", text: t })))), h("tbody", null, rows))
        : notice(state === "all" ? "No alerts." : `No ${state} alerts.`),
    );
    const colors = new AgentColors(agents);
    fill(
      causesBox,
      agents.map((agent, i) =>
        causes[i]?.error
          ? h("section", { class: "card causes-card", "data-agent": agent }, h("h2", { text: `Causes of ${agent}'s failed traces` }), notice(causes[i].error, "error"))
          : causesCard(causes[i], { window: windowParam, agent, colors }),
      ),
    );
    const drows = (deliveries?.deliveries || []).slice().reverse().map((d) =>
      h(
        "tr",
        { class: d.ok ? "" : "has-error" },
        h("td", { class: "nowrap" }, fmt.time(d.time)),
        h("td", { text: String(d.kind ?? "") }),
        h("td", { text: String(d.alertname ?? "") }),
        h("td", { text: deliveryAgent(d) }),
        h("td", { text: String(d.recipient ?? "") }),
        h("td", { class: "num" }, String(d.attempt ?? "")),
        h("td", null, h("span", { class: `pill ${d.ok ? "ok" : "error"}`, text: d.ok ? "delivered" : d.retryable ? "failed, will retry" : "failed" })),
        h("td", { class: "small", text: String(d.error ?? "") }),
      ),
    );
    fill(deliveriesBox, 
      drows.length
        ? h("table", { class: "grid", id: "deliveries" }, h("thead", null, h("tr", null, ["Time", "Kind", "Alert", "Agent", "Recipient", "Attempt", "Result", "Error"].map((t) => h("th", { scope: "col", text: t })))), h("tbody", null, drows))
        : notice("No delivery attempts recorded."),
    );
  }

  await load();
  ctx.every(REFRESH_MS, load);
}

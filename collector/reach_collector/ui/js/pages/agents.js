// Agents: golden metrics per agent (GET /api/metrics/golden?by=agent) with per-minute sparklines
// (GET /api/metrics/timeseries), the causes of the failed traces (GET /api/causes), the
// multi-agent metrics, tokens and cost (GET /api/metrics/agents), the quality of their evaluated
// answers (GET /api/metrics/quality) and heartbeats (GET /api/agents).
// `?agent=` narrows the page to one agent: its rows, and the causes of the traces it failed in.

import { ApiError, get } from "../api.js";
import { causesCard } from "../causes.js";
import { AgentColors } from "../colors.js";
import { fill, h, notice, s } from "../dom.js";
import * as fmt from "../format.js";
import { qualityCard } from "../quality.js";
import { agentChip } from "./traces.js";

const WINDOWS = ["5m", "15m", "1h", "6h", "24h"];
const SPARK_SINCE = "1h";
const REFRESH_MS = 15000;

// At most this many values in a series: each is also a dot, and the last one is written out, so a
// chart whose data fell in a minute or two is not a speck at its edge.
const FEW = 3;

/**
 * A sparkline of one series' points ({value}), nulls as gaps. A point with no neighbour is a dot; a
 * series of a few values also marks each one and writes the last, and a series of one value draws
 * its level across the chart, so a chart is never blank where there is data.
 */
export function sparkline(points, { width = 140, height = 28, colour = "#4e79a7", label = "", format = fmt.num } = {}) {
  const values = points.map((p) => (p.value === null || p.value === undefined ? null : Number(p.value)));
  const present = values.filter((v) => v !== null);
  const max = Math.max(0, ...present);
  const svg = s("svg", { class: "spark", viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": label });
  svg.append(s("title", null, `${label}: ${present.length ? `max ${format(max)}` : "no data"}`));
  const step = values.length > 1 ? (width - 8) / (values.length - 1) : 0;
  const xAt = (i) => (values.length > 1 ? 4 + i * step : width / 2);
  // 4px in, so a dot is whole; a lone value has no scale to sit on: it sits in the middle.
  const yAt = (v) => (present.length === 1 ? height / 2 : height - 4 - (max ? (v / max) * (height - 8) : 0));
  const few = present.length <= FEW;
  let d = "";
  const dots = [];
  values.forEach((v, i) => {
    if (v === null) return;
    const [x, y] = [xAt(i), yAt(v)];
    const joined = i > 0 && values[i - 1] !== null;
    const alone = !joined && (i + 1 >= values.length || values[i + 1] === null);
    // A dot as a path (two arcs): the page draws no <circle>, which span text can never become.
    if (alone || few) dots.push(s("path", { class: "spark-dot", d: `M${(x - 2.4).toFixed(1)},${y.toFixed(1)}a2.4,2.4 0 1,0 4.8,0a2.4,2.4 0 1,0 -4.8,0z`, fill: colour }));
    if (!alone) d += `${joined ? "L" : "M"}${x.toFixed(1)},${y.toFixed(1)}`;
  });
  if (present.length === 1) {
    const y = yAt(present[0]);
    svg.append(s("path", { class: "spark-level", d: `M2,${y}L${width - 2},${y}`, stroke: colour, "stroke-width": "1", "stroke-opacity": "0.35", "stroke-dasharray": "3 3", fill: "none" }));
  }
  if (present.length && few) {
    // The last value, written beside its dot (on the side with room).
    const last = values.length - 1 - [...values].reverse().findIndex((v) => v !== null);
    const [x, y] = [xAt(last), yAt(values[last])];
    const left = x > width / 2;
    svg.append(s("text", { class: "spark-value", x: (left ? x - 6 : x + 6).toFixed(1), y: Math.max(9, y - 3).toFixed(1), "text-anchor": left ? "end" : "start" }, format(values[last])));
  }
  if (d || !present.length) {
    svg.append(s("path", { d: d || `M0,${height - 4}L${width},${height - 4}`, fill: "none", stroke: colour, "stroke-width": "1.6", "stroke-linecap": "round", "stroke-linejoin": "round" }));
  }
  svg.append(...dots);
  return svg;
}

function byKey(series) {
  return new Map((series?.series || []).map((x) => [String(x.key), x.points || []]));
}

function rateBar(ratio, { judge = true } = {}) {
  const wrap = h("span", { class: "ratebar" }, h("span", { class: "fill" }), h("span", { class: "txt", text: fmt.pct(ratio, 1) }));
  if (ratio !== null && ratio !== undefined) {
    wrap.firstChild.style.width = `${Math.max(0, Math.min(1, ratio)) * 100}%`;
    wrap.classList.toggle("bad", judge && ratio < 0.5);
    wrap.classList.toggle("warn", judge && ratio >= 0.5 && ratio < 0.9);
    wrap.classList.toggle("neutral", !judge);
  }
  return wrap;
}

function stat(label, value, hint = "") {
  return h("div", { class: "tile", title: hint }, h("div", { class: "tile-value", text: value }), h("div", { class: "tile-label", text: label }));
}

export async function render(root, ctx) {
  document.title = "Agents · reach-otel";
  const windowParam = WINDOWS.includes(ctx.params.get("window")) ? ctx.params.get("window") : "15m";
  const only = ctx.params.get("agent") || null;
  const here = (w, a) => `/ui/agents?${new URLSearchParams(a ? { window: w, agent: a } : { window: w })}`;
  const select = h("select", { id: "window", "aria-label": "window" }, WINDOWS.map((w) => h("option", { value: w, selected: w === windowParam, text: `last ${w}` })));
  select.addEventListener("change", () => ctx.navigate(here(select.value, only), { replace: true }));
  const pick = h("select", { id: "agent", "aria-label": "agent" }, h("option", { value: "", text: "all agents" }), only ? h("option", { value: only, selected: true, text: only }) : null);
  pick.addEventListener("change", () => ctx.navigate(here(windowParam, pick.value), { replace: true }));
  const body = h("div", { id: "agents-body", class: "stack" });
  root.append(h("div", { class: "page-head" }, h("h1", { text: "Agents" }), select, pick, h("span", { class: "muted", id: "agents-updated" })), body);

  /** The agents to pick from: those with calls in the window, and the one picked. */
  function pickable(names) {
    const all = [...new Set([...names.map(String), ...(only ? [only] : [])])].sort((a, b) => a.localeCompare(b));
    if (pick.options.length === all.length + 1 && all.every((a, i) => pick.options[i + 1].value === a)) return;
    fill(pick, h("option", { value: "", text: "all agents" }), all.map((a) => h("option", { value: a, selected: a === only, text: a })));
  }

  async function load() {
    const failed = (e) => {
      if (e instanceof ApiError) return { error: e.message };
      throw e;
    };
    const [golden, calls, p95, multi, beats, causes, qualityAgents, qualityEvaluations] = await Promise.all([
      get("/api/metrics/golden", { window: windowParam, by: "agent" }, ctx.signal),
      get("/api/metrics/timeseries", { metric: "calls", by: "agent", step: "1m", since: SPARK_SINCE }, ctx.signal),
      get("/api/metrics/timeseries", { metric: "p95", by: "agent", step: "1m", since: SPARK_SINCE }, ctx.signal),
      get("/api/metrics/agents", { window: windowParam }, ctx.signal),
      get("/api/agents", null, ctx.signal).catch(() => null),
      get("/api/causes", { window: windowParam, agent: only }, ctx.signal).catch(failed),
      get("/api/metrics/quality", { window: windowParam, by: "agent" }, ctx.signal).catch(failed),
      get("/api/metrics/quality", { window: windowParam, by: "evaluation" }, ctx.signal).catch(failed),
    ]);
    const every = golden?.groups || [];
    pickable(every.map((g) => g.key).filter((k) => k !== null && k !== undefined));
    const colors = new AgentColors(every.map((g) => g.key));
    const groups = only ? every.filter((g) => String(g.key) === only) : every;
    const callSeries = byKey(calls);
    const p95Series = byKey(p95);
    const rows = groups.map((g) =>
      h(
        "tr",
        { "data-agent": String(g.key) },
        h("td", null, g.key === null || g.key === undefined ? agentChip("(none)", colors) : h("a", { href: here(windowParam, String(g.key)), class: "agent-link", title: `only ${g.key}` }, agentChip(g.key, colors))),
        h("td", { class: "num" }, fmt.int(g.calls)),
        h("td", { class: "num" }, g.errors ? h("span", { class: "pill error", text: fmt.int(g.errors) }) : "0"),
        h("td", null, rateBar(g.success_rate)),
        h("td", { class: "num" }, fmt.num(g.throughput_per_min, 1)),
        h("td", { class: "num" }, fmt.duration(g.p50_ms)),
        h("td", { class: "num" }, fmt.duration(g.p95_ms)),
        h("td", { class: "num" }, fmt.duration(g.p99_ms)),
        h("td", null, sparkline(callSeries.get(String(g.key)) || [], { colour: colors.get(g.key), label: `${g.key} calls per minute` })),
        h("td", null, sparkline(p95Series.get(String(g.key)) || [], { colour: colors.get(g.key), label: `${g.key} p95 per minute`, format: fmt.duration })),
      ),
    );
    const goldenTable = groups.length
      ? h(
          "table",
          { class: "grid", id: "golden" },
          h("thead", null, h("tr", null, ["Agent", "Calls", "Errors", "Success", "OK / min", "p50", "p95", "p99", `Calls / min (${SPARK_SINCE})`, `p95 / min (${SPARK_SINCE})`].map((t) => h("th", { scope: "col", text: t })))),
          h("tbody", null, rows),
        )
      : notice(only ? `No calls of ${only} in the last ${windowParam}.` : `No agent calls in the last ${windowParam}.`);
    const hand = multi?.handoffs || {};
    const hops = multi?.hops || {};
    const loops = multi?.loops || {};
    const tokens = (multi?.agents || []).filter((a) => !only || String(a.agent) === only).map((a) =>
      h(
        "tr",
        { "data-agent": String(a.agent) },
        h("td", null, agentChip(a.agent, colors)),
        h("td", { class: "num" }, fmt.int(a.input_tokens)),
        h("td", { class: "num" }, fmt.int(a.output_tokens)),
        h("td", null, rateBar(a.token_share, { judge: false })),
        h(
          "td",
          { class: "num", title: (a.unpriced_models || []).length ? `no price for ${a.unpriced_models.join(", ")}` : "" },
          a.cost_usd === null || a.cost_usd === undefined ? h("span", { class: "muted", text: (a.unpriced_models || []).length ? "unpriced" : "–" }) : fmt.usd(a.cost_usd),
        ),
      ),
    );
    const heartbeats = (beats?.agents || []).map((a) =>
      h("tr", null, h("td", { class: "mono", text: String(a.agent_id) }), h("td", null, h("span", { class: `pill hb-${a.status}`, text: String(a.status) })), h("td", { text: `${fmt.time(a.last_heartbeat)} (${fmt.ago(a.last_heartbeat)})` })),
    );
    fill(body, 
      h("section", { class: "card" }, h("h2", { text: `Golden metrics per agent — last ${windowParam}` }), goldenTable),
      qualityCard(qualityAgents, qualityEvaluations, { window: windowParam, only, agentCell: (key) => agentChip(key, colors) }),
      causes?.error
        ? h("section", { class: "card causes-card", id: "causes" }, h("h2", { text: "Causes of failed traces" }), notice(causes.error, "error"))
        : causesCard(causes, { window: windowParam, agent: only, colors, id: "causes" }),
      h(
        "section",
        { class: "card" },
        h("h2", { text: `Handoffs, hops and loops — last ${windowParam}` }),
        h(
          "div",
          { class: "tiles", id: "multi" },
          stat("handoffs", fmt.int(hand.total)),
          stat("efficiency", fmt.pct(hand.efficiency), "committed / all handoffs"),
          hand.resolved === undefined || hand.resolved === null ? null : stat("resolved", fmt.pct(hand.total ? hand.resolved / hand.total : null), `${fmt.int(hand.resolved)} handoffs whose trace (or conversation) an evaluation judged good / all handoffs`),
          stat("acceptance", fmt.pct(hand.acceptance_rate)),
          stat("commit rate", fmt.pct(hand.commit_rate), "committed / accepted"),
          stat("unknown", fmt.pct(hand.unknown_rate)),
          stat("escalation", fmt.pct(hand.escalation_rate)),
          stat("inferred", fmt.int(hand.inferred), "outcome inferred from the target's next agent span"),
          stat("hops p50 / p95 / p99", `${fmt.num(hops.p50)} / ${fmt.num(hops.p95)} / ${fmt.num(hops.p99)}`),
          stat("≤ 2 hops", fmt.pct(hops.share_le_2)),
          stat("loops", `${fmt.int(loops.traces_with_loop)} (${fmt.pct(loops.rate, 1)})`, "traces with a loop"),
        ),
      ),
      h(
        "section",
        { class: "card" },
        h("h2", { text: `Tokens and cost per agent — last ${windowParam}` }),
        tokens.length
          ? h("table", { class: "grid", id: "tokens" }, h("thead", null, h("tr", null, ["Agent", "Input tokens", "Output tokens", "Share", "Cost (USD)"].map((t) => h("th", { scope: "col", text: t })))), h("tbody", null, tokens))
          : notice("No LLM tokens in this window."),
      ),
      heartbeats.length
        ? h("section", { class: "card" }, h("h2", { text: "Heartbeats" }), h("table", { class: "grid", id: "heartbeats" }, h("thead", null, h("tr", null, ["Agent id", "Status", "Last heartbeat"].map((t) => h("th", { scope: "col", text: t })))), h("tbody", null, heartbeats)))
        : null,
    );
    document.getElementById("agents-updated").textContent = `updated ${new Date().toISOString().slice(11, 19)} UTC`;
  }

  await load();
  ctx.every(REFRESH_MS, load);
}

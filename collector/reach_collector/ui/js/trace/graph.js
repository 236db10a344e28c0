// An agent graph as SVG: agents as nodes, handoffs as arrows coloured by their main outcome and
// labelled with counts, failures and hops. Layered left to right from the first agent; an edge
// within a column arcs to its right, an edge going back (a ping-pong, a return to the caller) arcs
// below every node. Every label is an SVG text node.

import { s } from "../dom.js";

const NODE_W = 200;
const NODE_H = 46;
const COL_GAP = 320;
const ROW_GAP = 72;
const MARGIN = 16;
export const OUTCOME_COLORS = {
  committed: "#2e7d32",
  failed: "#d62728",
  rejected: "#e8710a",
  unknown: "#8a8f98",
  expired: "#8a8f98",
  other: "#1f6fb2",
};
const SEVERITY = ["failed", "rejected", "unknown", "expired", "other", "committed"];
let graphs = 0;

function kind(status) {
  return status in OUTCOME_COLORS ? status : "other";
}

/** The outcome an edge is drawn in: the one most of its handoffs had (ties go to the worse). */
export function edgeOutcome(statuses) {
  const totals = {};
  for (const [k, c] of Object.entries(statuses || {})) totals[kind(k)] = (totals[kind(k)] || 0) + Number(c || 0);
  let best = "unknown";
  let most = -1;
  for (const k of SEVERITY) {
    if ((totals[k] || 0) > most) {
      best = k;
      most = totals[k] || 0;
    }
  }
  return most > 0 ? best : "unknown";
}

function layers(nodes, edges) {
  const out = new Map();
  const next = new Map(nodes.map((v) => [v.id, []]));
  for (const e of edges) if (e.source !== e.target && next.has(e.source)) next.get(e.source).push(e.target);
  // Start from the agents that hand off more than they receive (the entry points), in that order;
  // agents with no handoff at all come last.
  const score = new Map(nodes.map((v) => [v.id, 0]));
  const linked = new Set();
  for (const e of edges) {
    if (e.source === e.target) continue;
    score.set(e.source, (score.get(e.source) ?? 0) - (e.count || 1));
    score.set(e.target, (score.get(e.target) ?? 0) + (e.count || 1));
    linked.add(e.source).add(e.target);
  }
  const order = new Map(nodes.map((v, i) => [v.id, i]));
  const starts = [...nodes].sort(
    (a, b) => Number(!linked.has(a.id)) - Number(!linked.has(b.id)) || score.get(a.id) - score.get(b.id) || order.get(a.id) - order.get(b.id),
  );
  for (const start of starts) {
    if (out.has(start.id)) continue;
    out.set(start.id, 0);
    const queue = [start.id];
    while (queue.length) {
      const id = queue.shift();
      for (const t of next.get(id) || []) {
        if (!out.has(t)) {
          out.set(t, out.get(id) + 1);
          queue.push(t);
        }
      }
    }
  }
  return out;
}

let measurer = null; // a canvas context, only to measure text (the drawing is SVG)

function clip(text, max) {
  const t = String(text);
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

/** ``text`` cut (with an ellipsis) to fit ``width`` in ``font``, as measured; by count without a canvas. */
function fit(text, width, font, max) {
  let t = clip(text, max);
  try {
    measurer ??= document.createElement("canvas").getContext("2d");
    measurer.font = font;
    while (t.length > 2 && measurer.measureText(t).width > width) t = `${t.slice(0, -2)}…`;
  } catch {
    // no canvas: the count above
  }
  return t;
}

function bezier(p0, p1, p2, p3, t) {
  const u = 1 - t;
  return [
    u * u * u * p0[0] + 3 * u * u * t * p1[0] + 3 * u * t * t * p2[0] + t * t * t * p3[0],
    u * u * u * p0[1] + 3 * u * u * t * p1[1] + 3 * u * t * t * p2[1] + t * t * t * p3[1],
  ];
}

// Where along an edge its label may sit, in order of preference (t of the edge's curve).
const ALONG = [0.6, 0.5, 0.7, 0.4, 0.75, 0.3, 0.8, 0.25, 0.85, 0.2];
// Text and its white halo around the baseline: 11px type (console.css .edge-label).
const LABEL_UP = 11;
const LABEL_DOWN = 4;
const LABEL_PAD = 3;

/** The width of an edge label as drawn: measured in the page's font, else estimated. */
function labelWidth(text, font) {
  try {
    measurer ??= document.createElement("canvas").getContext("2d");
    measurer.font = font;
    const w = measurer.measureText(text).width;
    if (w > 0) return w + 4; // + the halo's stroke
  } catch {
    // no canvas: estimate
  }
  return text.length * 6.8 + 4;
}

function boxAt([x, y], width, anchor) {
  const left = anchor === "start" ? x : anchor === "end" ? x - width : x - width / 2;
  return { left, right: left + width, top: y - LABEL_UP, bottom: y + LABEL_DOWN };
}

function overlap(a, b) {
  const w = Math.min(a.right, b.right) - Math.max(a.left, b.left) + LABEL_PAD;
  const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) + LABEL_PAD;
  return w > 0 && h > 0 ? w * h : 0;
}

/**
 * The first of `candidates` ([x, y, anchor], y the text's baseline) whose box meets no box in
 * `taken` (nodes and the labels placed before); where every one meets something, the one that
 * covers least. The chosen box joins `taken`.
 */
function place(taken, candidates, width) {
  let best = null;
  let least = Infinity;
  for (const [x, y, anchor] of candidates) {
    const box = boxAt([x, y], width, anchor);
    const covered = taken.reduce((sum, b) => sum + overlap(box, b), 0);
    if (covered < least) {
      best = { x, y, anchor, box };
      least = covered;
      if (covered === 0) break;
    }
  }
  taken.push(best.box);
  return best;
}

/** Label spots on a curve: on it (the halo hides the line) and just above and below it. */
function alongCurve(p, order = ALONG) {
  return order.flatMap((t) => {
    const [x, y] = bezier(...p, t);
    return [
      [x, y + 4, "middle"],
      [x, y - 6, "middle"],
      [x, y + 15, "middle"],
    ];
  });
}

/**
 * @param nodes [{id, color, sub: string, error: bool}]
 * @param edges [{source, target, count, statuses: {status: count}, label: string, dashed: bool, loop: bool}]
 */
export function agentGraph(nodes, edges, { id = "agent-graph", title = "agent graph", onNode = null, onEdge = null } = {}) {
  const prefix = `g${++graphs}`;
  const layer = layers(nodes, edges);
  const columns = new Map();
  for (const v of nodes) {
    const l = layer.get(v.id) ?? 0;
    if (!columns.has(l)) columns.set(l, []);
    columns.get(l).push(v);
  }
  const tallest = Math.max(1, ...[...columns.values()].map((c) => c.length));
  const lowest = new Map([...columns].map(([l, column]) => [l, column[column.length - 1].id])); // column → its bottom agent
  const lx = (e) => layer.get(e.target) ?? 0;
  const ls = (e) => layer.get(e.source) ?? 0;
  const back = edges.filter((e) => e.source !== e.target && lx(e) < ls(e));
  const sameColumn = edges.some((e) => e.source !== e.target && lx(e) === ls(e));
  const selfLoop = edges.some((e) => e.source === e.target);
  const top = MARGIN + (selfLoop ? 34 : 8);
  const bottomOfNodes = top + NODE_H + (tallest - 1) * ROW_GAP;
  const width = MARGIN * 2 + NODE_W + Math.max(0, columns.size - 1) * COL_GAP + (sameColumn ? 180 : 0);
  const height = bottomOfNodes + MARGIN + (back.length ? 30 + 14 * back.length : 0);
  const pos = new Map();
  for (const [l, column] of columns) {
    const offset = ((tallest - column.length) * ROW_GAP) / 2;
    column.forEach((v, i) => pos.set(v.id, { x: MARGIN + l * COL_GAP, y: top + offset + i * ROW_GAP }));
  }
  const svg = s("svg", { id, class: "graph", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title, width, height, preserveAspectRatio: "xMidYMin meet" });
  const defs = s("defs");
  for (const [name, colour] of Object.entries(OUTCOME_COLORS)) {
    defs.append(
      s(
        "marker",
        { id: `${prefix}-${name}`, viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "9", markerHeight: "9", markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" },
        s("path", { d: "M0,0 L10,5 L0,10 z", fill: colour }),
      ),
    );
  }
  svg.append(defs, s("title", null, title));
  const edgeLayer = s("g", { class: "edges" });
  const labelLayer = s("g", { class: "edge-labels" });
  const nodeLayer = s("g", { class: "nodes" });
  svg.append(edgeLayer, nodeLayer, labelLayer);
  const pairs = new Set(edges.map((e) => `${e.source}\u0000${e.target}`));
  let backIndex = 0;
  // Labels keep off the nodes and each other (SPEC §14: a graph a new user reads at a glance).
  const taken = [...pos.values()].map((p) => ({ left: p.x, right: p.x + NODE_W, top: p.y, bottom: p.y + NODE_H }));
  const family = (typeof getComputedStyle === "function" && getComputedStyle(document.body).fontFamily) || "sans-serif";
  const font = `600 11px ${family}`;
  const labels = [];
  let [minX, minY, maxX, maxY] = [0, 0, width, height]; // grows to hold every line and label

  for (const e of edges) {
    const a = pos.get(e.source);
    const b = pos.get(e.target);
    if (!a || !b) continue;
    const outcome = edgeOutcome(e.statuses);
    const colour = OUTCOME_COLORS[outcome];
    let p;
    let spots; // where its label may go, best first: [x, baseline y, text-anchor]
    if (e.source === e.target) {
      const x = a.x + NODE_W / 2;
      p = [[x - 16, a.y], [x - 34, a.y - 34], [x + 34, a.y - 34], [x + 16, a.y]];
      spots = [[x + 30, a.y - 22, "start"], [x - 30, a.y - 22, "end"], [x, a.y - 30, "middle"]];
    } else if (lx(e) > ls(e)) {
      const bend = pairs.has(`${e.target}\u0000${e.source}`) ? -7 : 0;
      const x1 = a.x + NODE_W;
      const y1 = a.y + NODE_H / 2 + bend;
      const x2 = b.x;
      const y2 = b.y + NODE_H / 2 + bend;
      const mid = (x1 + x2) / 2;
      p = [[x1, y1], [mid, y1], [mid, y2], [x2 - 1, y2]];
      spots = alongCurve(p);
      // Where the gap between the columns is narrower than the label: above the pair, else below.
      const above = Math.min(a.y, b.y) - LABEL_DOWN - LABEL_PAD - 2;
      const below = Math.max(a.y, b.y) + NODE_H + LABEL_UP + LABEL_PAD + 2;
      spots.push([mid, above, "middle"], [mid, above - 15, "middle"], [mid, below, "middle"]);
    } else if (lx(e) === ls(e)) {
      const x = a.x + NODE_W;
      const y1 = a.y + NODE_H / 2 + 6;
      const y2 = b.y + NODE_H / 2 - 6;
      // An edge up the column arcs wider than one down it, so a pair reads as two arcs.
      const reach = 36 + Math.abs(y2 - y1) * 0.25 + (y2 < y1 ? 26 : 0);
      p = [[x, y1], [x + reach, y1], [x + reach, y2], [x + 1, y2]];
      const [ax, ay] = bezier(...p, 0.5);
      spots = [0, -13, 13, -26, 26, -39, 39].map((dy) => [ax + 6, ay + 4 + dy, "start"]);
      spots.push(...alongCurve(p, [0.5, 0.35, 0.65, 0.25, 0.75]));
    } else {
      // Below every node; from (to) an agent with others under it, leave (enter) by its left
      // side, so the line does not run behind them and read as an edge between them.
      const drop = bottomOfNodes + 18 + 14 * backIndex++;
      const x1 = a.x + NODE_W / 2 - 10;
      const x2 = b.x + NODE_W / 2 + 10;
      const start = lowest.get(ls(e)) === e.source ? [[x1, a.y + NODE_H], [x1, drop + 8]] : [[a.x, a.y + NODE_H - 10], [a.x - 60, drop + 8]];
      const end = lowest.get(lx(e)) === e.target ? [[x2, drop + 8], [x2, b.y + NODE_H + 1]] : [[b.x - 60, drop + 8], [b.x - 1, b.y + NODE_H - 10]];
      p = [...start, ...end];
      spots = alongCurve(p, [0.5, 0.4, 0.6, 0.3, 0.7]);
    }
    const [p0, p1, p2, p3] = p;
    for (const [x, y] of p) {
      // A curve stays inside its control points' hull.
      minX = Math.min(minX, x - 4);
      maxX = Math.max(maxX, x + 4);
      maxY = Math.max(maxY, y + 4);
    }
    const d = `M${p0[0]},${p0[1]} C${p1[0]},${p1[1]} ${p2[0]},${p2[1]} ${p3[0]},${p3[1]}`;
    const g = s("g", { class: `edge o-${outcome}${e.dashed ? " inferred" : ""}`, "data-source": e.source, "data-target": e.target, "data-count": String(e.count ?? 1) });
    g.append(
      s("title", null, `${e.source} → ${e.target}: ${e.title ?? e.label}`),
      s("path", {
        d,
        fill: "none",
        stroke: colour,
        "stroke-width": String(Math.min(4.5, 1.5 + Math.log2(e.count || 1) * 0.6)),
        "stroke-dasharray": e.dashed ? "5 4" : null,
        "marker-end": `url(#${prefix}-${outcome})`,
      }),
    );
    if (onEdge) {
      g.append(s("path", { d, fill: "none", stroke: "transparent", "stroke-width": "12", "pointer-events": "stroke", class: "hit" }));
      g.classList.add("clickable");
      g.addEventListener("click", () => onEdge(e));
    }
    edgeLayer.append(g);
    const label = clip(`${e.loop ? "⟳ " : ""}${e.label}`, 34);
    labels.push({ e, label, outcome, colour, spots, width: labelWidth(label, font) });
  }
  // The busiest edges choose their spots first.
  labels.sort((x, y) => (y.e.count ?? 1) - (x.e.count ?? 1));
  for (const l of labels) {
    const at = place(taken, l.spots, l.width);
    minX = Math.min(minX, at.box.left - 2);
    maxX = Math.max(maxX, at.box.right + 2);
    minY = Math.min(minY, at.box.top - 2);
    maxY = Math.max(maxY, at.box.bottom + 2);
    // A light ground under the text: the lines it sits on do not run through its letters.
    const b = at.box;
    labelLayer.append(s("rect", { x: (b.left + 1).toFixed(1), y: (b.top + 1).toFixed(1), width: (b.right - b.left - 2).toFixed(1), height: (b.bottom - b.top - 1).toFixed(1), rx: "3", class: "edge-label-ground" }));
    const text = s("text", { x: at.x.toFixed(1), y: at.y.toFixed(1), class: `edge-label o-${l.outcome}`, "text-anchor": at.anchor, fill: l.colour, "data-source": l.e.source, "data-target": l.e.target }, l.label);
    labelLayer.append(text);
  }
  // Room for every label: the drawing grows where one had to go outside it.
  const [w, hgt] = [Math.ceil(maxX - minX), Math.ceil(maxY - minY)];
  svg.setAttribute("viewBox", `${Math.floor(minX)} ${Math.floor(minY)} ${w} ${hgt}`);
  svg.setAttribute("width", String(w));
  svg.setAttribute("height", String(hgt));

  for (const v of nodes) {
    const p = pos.get(v.id);
    const g = s("g", { class: `node${v.error ? " has-error" : ""}`, "data-agent": v.id, transform: `translate(${p.x},${p.y})` });
    g.append(
      s("title", null, v.title ?? v.id),
      s("rect", { width: NODE_W, height: NODE_H, rx: "7", class: "node-box", stroke: v.color }),
      s("rect", { x: "0.75", y: "0.75", width: "6", height: NODE_H - 1.5, rx: "3", fill: v.color }),
      s("text", { x: "14", y: "19", class: "node-name" }, fit(v.id, NODE_W - 22, `650 13px ${family}`, 23)),
      s("text", { x: "14", y: "36", class: `node-sub${v.error ? " error" : ""}` }, fit(v.sub || "", NODE_W - 18, `11px ${family}`, 31)),
    );
    if (onNode) {
      g.classList.add("clickable");
      g.addEventListener("click", () => onNode(v));
    }
    nodeLayer.append(g);
  }
  return svg;
}

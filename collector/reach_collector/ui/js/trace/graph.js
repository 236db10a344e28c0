// An agent graph as SVG: agents as nodes, handoffs as arrows coloured by their main outcome and
// labelled with counts, failures and hops. dagre lays it out (ranks, the order within a rank that
// crosses least, and a place for each edge's label on that edge); the edges are then drawn through
// dagre's points, straight across a rank and curved only in the gaps between ranks, where no agent
// is, so no edge runs through an agent it does not start or end at. Every label is SVG text.

import { s } from "../dom.js";
import dagre from "../vendor/dagre.js";

const NODE_H = 46;
const NODE_MIN_W = 120;
const NODE_MAX_W = 260;
const LABEL_H = 16; // 11px type on its ground (console.css .edge-label)
const LOOP_ROOM = 26 + LABEL_H; // above an agent that hands off to itself: the loop and its label
const MARGIN = 12;
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

let measurer = null; // a canvas context, only to measure text (the drawing is SVG)

/** The width of ``text`` in ``font``: measured in the page's font, else estimated from its length. */
function textWidth(text, font, perChar) {
  try {
    measurer ??= document.createElement("canvas").getContext("2d");
    measurer.font = font;
    const w = measurer.measureText(text).width;
    if (w > 0) return w;
  } catch {
    // no canvas: estimate
  }
  return text.length * perChar;
}

function clip(text, max) {
  const t = String(text);
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

/** ``text`` cut (with an ellipsis) to fit ``width`` in ``font`` (the full text is the node's title). */
function fit(text, width, font) {
  let t = String(text);
  while (t.length > 2 && textWidth(t, font, 7.5) > width) t = `${t.slice(0, -2)}…`;
  return t;
}

/**
 * Lay the graph out with dagre, ranks along ``rankdir``; every edge (but a self-loop, drawn above
 * its agent in room kept for it) carries its label's box, which dagre places on the edge's path.
 */
function layout(nodes, edges, rankdir, ranksep) {
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir, nodesep: 22, edgesep: 14, ranksep, marginx: MARGIN, marginy: MARGIN });
  for (const v of nodes) {
    const loopW = v.loopLabel ? v.loopLabel.width + 8 : 0;
    g.setNode(v.id, { width: Math.max(v.width, loopW), height: NODE_H + (v.loopLabel ? LOOP_ROOM : 0) });
  }
  edges.forEach((e, i) => {
    if (e.source === e.target) return;
    // The busier an edge, the straighter dagre keeps it.
    g.setEdge(e.source, e.target, { width: e.labelWidth, height: LABEL_H, labelpos: "c", weight: 1 + Math.log2(1 + (e.count || 1)) }, String(i));
  });
  dagre.layout(g);
  return g;
}

/**
 * Where each edge meets each agent's side (keys: edge name + ">" where it leaves, "<" where it
 * arrives): alone on a side, about where dagre aimed it; several on one side, spread evenly along it
 * in the order they go, so no two arrows meet at one point. Kept off the box's corners.
 */
function ports(g, edges, boxes, horizontal) {
  const main = horizontal ? "x" : "y";
  const cross = horizontal ? "y" : "x";
  const sides = new Map();
  const at = (agent, sign, key, towards) => {
    const side = `${agent}\u0000${sign}`;
    if (!sides.has(side)) sides.set(side, { agent, ends: [] });
    sides.get(side).ends.push({ key, towards });
  };
  for (const e of edges) {
    if (e.source === e.target) continue;
    const { points } = g.edge(e.source, e.target, e.name);
    const dir = Math.sign(g.node(e.target)[main] - g.node(e.source)[main]) || 1;
    at(e.source, dir, `${e.name}>`, points[Math.min(1, points.length - 1)][cross]);
    at(e.target, -dir, `${e.name}<`, points[Math.max(0, points.length - 2)][cross]);
  }
  const out = new Map();
  for (const { agent, ends } of sides.values()) {
    const box = boxes.get(agent);
    const low = box[cross] - box.crossSize / 2 + 8;
    const high = box[cross] + box.crossSize / 2 - 8;
    ends.sort((p, q) => p.towards - q.towards);
    ends.forEach((p, i) => {
      out.set(p.key, ends.length === 1 ? Math.min(high, Math.max(low, p.towards)) : low + ((high - low) * i) / (ends.length - 1));
    });
  }
  return out;
}

/** Each rank's position on the main axis (rounded) → half the width of its band: its widest agent
 * or label, every one of which dagre centres on the rank. */
function bandsOf(g, horizontal) {
  const [main, size] = horizontal ? ["x", "width"] : ["y", "height"];
  const bands = new Map();
  const band = (at, half) => {
    const key = Math.round(at);
    bands.set(key, Math.max(bands.get(key) ?? 0, half));
  };
  for (const v of g.nodes()) band(g.node(v)[main], g.node(v)[size] / 2);
  for (const ed of g.edges()) {
    const l = g.edge(ed);
    if (l.x !== undefined) band(l[main], l[size] / 2);
  }
  return bands;
}

/**
 * The path of an edge through dagre's points: a point in a rank becomes a straight run across that
 * rank's band (as wide as its widest agent or label) at the point's height, and consecutive runs are
 * joined by curves that stay in the gap between two bands, where there are no agents.
 */
function route(g, e, horizontal, bands) {
  const main = horizontal ? "x" : "y";
  const cross = horizontal ? "y" : "x";
  const size = horizontal ? "width" : "height";
  const label = g.edge(e.source, e.target, e.name);
  const a = g.node(e.source);
  const b = g.node(e.target);
  const mids = label.points.slice(1, -1);
  const dir = Math.sign(b[main] - a[main]) || 1;
  const pt = (m, c) => (horizontal ? [m, c] : [c, m]);
  // Where it leaves and enters an agent: on the side facing the way it goes, at its port there.
  const sm = e.sourceBox[main] + dir * (e.sourceBox.mainSize / 2);
  const em = e.targetBox[main] - dir * (e.targetBox.mainSize / 2);
  const [sc, ec] = [e.ports.get(`${e.name}>`), e.ports.get(`${e.name}<`)];
  const runs = [[sm, sc]];
  const own = (v) => bands.get(Math.round(v[main])) ?? v[size] / 2;
  runs.push([a[main] + dir * own(a), sc]); // out of its own rank's band before turning
  for (const p of mids) {
    const half = bands.get(Math.round(p[main])) ?? 0;
    runs.push([p[main] - dir * half, p[cross]], [p[main] + dir * half, p[cross]]);
  }
  runs.push([b[main] - dir * own(b), ec], [em, ec]);
  let d = `M${pt(...runs[0]).join(",")}`;
  for (let i = 1; i < runs.length; i++) {
    const [m0, c0] = runs[i - 1];
    const [m1, c1] = runs[i];
    if (Math.abs(m1 - m0) < 0.01 && Math.abs(c1 - c0) < 0.01) continue;
    if (Math.abs(c1 - c0) < 0.5) {
      d += ` L${pt(m1, c1).join(",")}`;
    } else {
      const mid = (m0 + m1) / 2; // both handles level: the curve never leaves the gap [m0, m1]
      d += ` C${pt(mid, c0).join(",")} ${pt(mid, c1).join(",")} ${pt(m1, c1).join(",")}`;
    }
  }
  return d;
}

function round(n) {
  return Math.round(n * 10) / 10;
}

/**
 * @param nodes [{id, color, sub: string, error: bool, title?: string}]
 * @param edges [{source, target, count, statuses: {status: count}, label: string, title?: string, dashed: bool, loop: bool}]
 * @param fit   the room the drawing is shown in: of the two directions, the one drawn larger in it
 */
export function agentGraph(nodes, edges, { id = "agent-graph", title = "agent graph", onNode = null, onEdge = null, fit: room = { width: 1200, height: 520 } } = {}) {
  const prefix = `g${++graphs}`;
  const family = (typeof getComputedStyle === "function" && getComputedStyle(document.body).fontFamily) || "sans-serif";
  const nameFont = `650 13px ${family}`;
  const subFont = `11px ${family}`;
  const labelFont = `600 11px ${family}`;
  const known = new Set(nodes.map((v) => v.id));
  const shown = edges
    .filter((e) => known.has(e.source) && known.has(e.target))
    .map((e, i) => {
      const text = clip(`${e.loop ? "⟳ " : ""}${e.label}`, 40);
      return { ...e, text, name: String(i), labelWidth: Math.ceil(textWidth(text, labelFont, 6.8)) + 10 };
    });
  const selfLoops = new Map(shown.filter((e) => e.source === e.target).map((e) => [e.source, e]));
  const laid = nodes.map((v) => {
    const wanted = Math.max(textWidth(String(v.id), nameFont, 8) + 24, textWidth(String(v.sub || ""), subFont, 6.5) + 22);
    const width = Math.ceil(Math.min(NODE_MAX_W, Math.max(NODE_MIN_W, wanted)));
    const loop = selfLoops.get(v.id);
    return { ...v, width, loopLabel: loop ? { width: loop.labelWidth } : null };
  });
  // Both directions, with wide gaps between ranks (where edges turn) or, where room is short,
  // narrower ones: kept is the one shown largest in the room it has (ties: the earlier).
  let g = null;
  let horizontal = true;
  let best = -1;
  for (const [rankdir, ranksep] of [["LR", 88], ["TB", 88], ["LR", 56], ["TB", 56]]) {
    const candidate = layout(laid, shown, rankdir, ranksep);
    const { width, height } = candidate.graph();
    const scale = Math.min(1, room.width / width, room.height / height);
    if (scale > best + 0.02) {
      [g, horizontal, best] = [candidate, rankdir === "LR", scale];
    }
  }
  const { width, height } = g.graph();
  const boxes = new Map(); // an agent's drawn box (below the room kept for its self-loop)
  for (const v of laid) {
    const n = g.node(v.id);
    const top = n.y - n.height / 2 + (v.loopLabel ? LOOP_ROOM : 0);
    boxes.set(v.id, { left: n.x - v.width / 2, top, width: v.width, x: n.x, y: top + NODE_H / 2, mainSize: horizontal ? v.width : NODE_H, crossSize: horizontal ? NODE_H : v.width });
  }

  const attach = ports(g, shown, boxes, horizontal);
  const bands = bandsOf(g, horizontal);

  const svg = s("svg", { id, class: "graph", viewBox: `0 0 ${Math.ceil(width)} ${Math.ceil(height)}`, role: "img", "aria-label": title, width: Math.ceil(width), height: Math.ceil(height), preserveAspectRatio: "xMidYMin meet" });
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

  for (const e of shown) {
    const outcome = edgeOutcome(e.statuses);
    const colour = OUTCOME_COLORS[outcome];
    let d;
    let at; // the label's centre
    if (e.source === e.target) {
      // A loop on the agent's top edge, its label above it, in the room the layout kept there.
      const box = boxes.get(e.source);
      const [x, y] = [box.x, box.top];
      // The loop's top (¾ of its handles' height) is the label's middle: the label sits on it.
      const reach = ((LOOP_ROOM - LABEL_H / 2 - 1) * 4) / 3;
      d = `M${round(x - 16)},${round(y)} C${round(x - 34)},${round(y - reach)} ${round(x + 34)},${round(y - reach)} ${round(x + 16)},${round(y)}`;
      at = [x, y - (reach * 3) / 4];
    } else {
      const l = g.edge(e.source, e.target, e.name);
      d = route(g, { ...e, sourceBox: boxes.get(e.source), targetBox: boxes.get(e.target), ports: attach }, horizontal, bands);
      at = [l.x, l.y];
    }
    const group = s("g", { class: `edge o-${outcome}${e.dashed ? " inferred" : ""}`, "data-source": e.source, "data-target": e.target, "data-count": String(e.count ?? 1) });
    group.append(
      s("title", null, `${e.source} → ${e.target}: ${e.title ?? e.label}`),
      s("path", {
        d,
        class: "edge-line",
        fill: "none",
        stroke: colour,
        "stroke-width": String(Math.min(4.5, 1.5 + Math.log2(e.count || 1) * 0.6)),
        "stroke-dasharray": e.dashed ? "5 4" : null,
        "marker-end": `url(#${prefix}-${outcome})`,
      }),
    );
    if (onEdge) {
      group.append(s("path", { d, fill: "none", stroke: "transparent", "stroke-width": "12", "pointer-events": "stroke", class: "hit" }));
      group.classList.add("clickable");
      group.addEventListener("click", () => onEdge(e));
    }
    edgeLayer.append(group);
    // The label on its own edge, on a light ground that hides the line under its letters.
    const [cx, cy] = at;
    labelLayer.append(
      s("rect", { x: round(cx - e.labelWidth / 2 + 1), y: round(cy - LABEL_H / 2 + 1), width: e.labelWidth - 2, height: LABEL_H - 2, rx: "3", class: "edge-label-ground" }),
      s("text", { x: round(cx), y: round(cy + 4), class: `edge-label o-${outcome}`, "text-anchor": "middle", fill: colour, "data-source": e.source, "data-target": e.target }, s("title", null, `${e.source} → ${e.target}: ${e.title ?? e.label}`), e.text),
    );
  }

  for (const v of laid) {
    const box = boxes.get(v.id);
    const group = s("g", { class: `node${v.error ? " has-error" : ""}`, "data-agent": v.id, transform: `translate(${round(box.left)},${round(box.top)})` });
    group.append(
      s("title", null, v.title ?? v.id),
      s("rect", { width: v.width, height: NODE_H, rx: "7", class: "node-box", stroke: v.color }),
      s("rect", { x: "0.75", y: "0.75", width: "6", height: NODE_H - 1.5, rx: "3", fill: v.color }),
      s("text", { x: "14", y: "19", class: "node-name" }, fit(v.id, v.width - 22, nameFont)),
      s("text", { x: "14", y: "36", class: `node-sub${v.error ? " error" : ""}` }, fit(v.sub || "", v.width - 18, subFont)),
    );
    if (onNode) {
      group.classList.add("clickable");
      group.addEventListener("click", () => onNode(v));
    }
    nodeLayer.append(group);
  }
  return svg;
}

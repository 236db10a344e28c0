// Pure shaping of the trace JSON (GET /api/traces/{id}) for the trace page: rows in tree order with
// depth, each span's type and agent, markers (errors, gates, loops, hop limits), the handoff graph
// and the totals. No DOM here.

import * as n from "../names.js";

export const TYPES = {
  agent: { label: "agent", icon: "◆" },
  llm: { label: "LLM", icon: "●" },
  tool: { label: "tool", icon: "▲" },
  handoff: { label: "handoff", icon: "⇢" },
  workflow: { label: "workflow", icon: "■" },
  span: { label: "span", icon: "·" },
};

function attr(span, key) {
  const a = span.attributes;
  return a && typeof a === "object" ? a[key] : undefined;
}

export function spanType(span) {
  const op = span.operation || attr(span, n.GEN_AI_OPERATION_NAME);
  if (span.handoff || op === n.OP_HANDOFF) return "handoff";
  if (op === n.OP_AGENT) return "agent";
  if (n.LLM_OPERATIONS.includes(op)) return "llm";
  if (op === n.OP_TOOL) return "tool";
  if (op === n.OP_WORKFLOW) return "workflow";
  return "span";
}

function numberOrNull(v) {
  const x = typeof v === "string" && v.trim() !== "" ? Number(v) : v;
  return typeof x === "number" && Number.isFinite(x) ? x : null;
}

/** A span's tokens as the collector normalised them at ingest (input_tokens / output_tokens, from
 * whichever convention the span was written in), else read from its GenAI attributes. */
export function tokens(span) {
  const input = numberOrNull(
    span.input_tokens ?? attr(span, n.GEN_AI_USAGE_INPUT_TOKENS) ?? attr(span, n.GEN_AI_USAGE_PROMPT_TOKENS),
  );
  const output = numberOrNull(
    span.output_tokens ?? attr(span, n.GEN_AI_USAGE_OUTPUT_TOKENS) ?? attr(span, n.GEN_AI_USAGE_COMPLETION_TOKENS),
  );
  return { input, output };
}

/** The markers a row shows: error, gate(s), loop, hop limit exceeded. */
export function markers(span) {
  const out = [];
  if (span.status?.code === "ERROR") {
    out.push({ kind: "error", text: String(attr(span, n.ERROR_TYPE) || span.status.message || "error") });
  }
  let loop = attr(span, n.REACH_LOOP_DETECTED) === true;
  let hopLimit = attr(span, n.REACH_HOP_LIMIT_EXCEEDED) === true;
  for (const e of span.events || []) {
    if (e.name === n.EVENT_GATE_TRIGGERED) {
      out.push({ kind: "gate", text: String(e.attributes?.[n.REACH_GATE_NAME] ?? "gate"), time: e.time_unix_nano });
    } else if (e.name === n.EVENT_LOOP_DETECTED) loop = true;
    else if (e.name === n.EVENT_HOP_LIMIT_EXCEEDED) hopLimit = true;
  }
  if (loop) out.push({ kind: "loop", text: "loop" });
  if (hopLimit) out.push({ kind: "hoplimit", text: "hop limit" });
  return out;
}

export function handoffOf(span) {
  const h = span.handoff || {};
  return {
    source: h.source ?? attr(span, n.REACH_HANDOFF_SOURCE) ?? null,
    target: h.target ?? attr(span, n.REACH_HANDOFF_TARGET) ?? null,
    mode: h.mode ?? null,
    status: h.status ?? attr(span, n.REACH_HANDOFF_STATUS) ?? null,
    inferred: Boolean(h.inferred),
    hop: numberOrNull(attr(span, n.REACH_HOP_COUNT)),
    loop: attr(span, n.REACH_LOOP_DETECTED) === true,
  };
}

/**
 * The trace's spans in the collector's tree (views.span_tree, the one builder), walked depth first:
 * `{ order, depth }`, the index in `spans` of each line and the line's depth. The tree is read as
 * the trace JSON carries it: its nested `roots` when present, else each span's place in that tree
 * (`tree_order`, its line, and `tree_depth`), which `?tree=false` still sends. Spans with no
 * consistent place (a collector that sent none) are shown in span order, flat.
 */
export function treeLines(trace) {
  const spans = Array.isArray(trace.spans) ? trace.spans : [];
  const count = spans.length;
  const order = new Int32Array(count).fill(-1);
  const depth = new Int32Array(count);
  let sound = true;
  if (Array.isArray(trace.roots)) {
    const at = new Map();
    for (let i = 0; i < count; i++) if (!at.has(spans[i].span_id)) at.set(spans[i].span_id, i);
    const stack = [];
    for (let k = trace.roots.length - 1; k >= 0; k--) stack.push([trace.roots[k], 0]);
    let line = 0;
    while (stack.length && sound) {
      const [node, d] = stack.pop();
      const i = at.get(node?.span_id);
      if (i === undefined || line >= count) sound = false;
      else {
        order[line] = i;
        depth[line] = d;
        line += 1;
        const below = Array.isArray(node.children) ? node.children : [];
        for (let k = below.length - 1; k >= 0; k--) stack.push([below[k], d + 1]);
      }
    }
    sound = sound && line === count;
  } else {
    for (let i = 0; i < count && sound; i++) {
      const line = spans[i].tree_order;
      const d = spans[i].tree_depth;
      if (!Number.isInteger(line) || line < 0 || line >= count || order[line] !== -1 || !Number.isInteger(d) || d < 0) sound = false;
      else {
        order[line] = i;
        depth[line] = d;
      }
    }
    // Depth first: the first line is a root, and each line is at most one level below the one before.
    for (let k = 0; k < count && sound; k++) if (depth[k] > (k ? depth[k - 1] + 1 : 0)) sound = false;
  }
  if (!sound) {
    for (let i = 0; i < count; i++) order[i] = i;
    depth.fill(0);
  }
  return { order, depth };
}

/** Build the page model from `spans`, drawn in the collector's tree (`treeLines`). */
export function buildModel(trace) {
  const spans = Array.isArray(trace.spans) ? trace.spans : [];
  let t0 = Infinity;
  let t1 = -Infinity;
  for (const s of spans) {
    const a = Number(s.start_time_unix_nano);
    const b = Number(s.end_time_unix_nano);
    if (a < t0) t0 = a;
    if (b > t1) t1 = b;
  }
  if (!Number.isFinite(t0)) t0 = t1 = 0;
  const rows = [];
  const agentsSeen = [];
  const seenAgent = new Set();
  const noteAgent = (a) => {
    if (a !== null && a !== undefined && a !== "" && !seenAgent.has(String(a))) {
      seenAgent.add(String(a));
      agentsSeen.push(String(a));
    }
  };
  const { order, depth: depths } = treeLines(trace);
  // The row of the latest line at each depth: a line's parent is the latest one a level up.
  const latest = [];
  for (let line = 0; line < order.length; line++) {
    const node = spans[order[line]];
    const depth = depths[line];
    const parent = depth ? latest[depth - 1] : -1;
    const type = spanType(node);
    const own = node.agent ?? attr(node, n.GEN_AI_AGENT_NAME) ?? attr(node, n.REACH_AGENT_NAME) ?? null;
    const agent = own ?? (parent >= 0 ? rows[parent].agent : null);
    if (type === "agent") noteAgent(own);
    const index = rows.length;
    const row = {
      index,
      span: node,
      depth,
      parent,
      type,
      agent,
      start: (Number(node.start_time_unix_nano) - t0) / 1e6,
      end: (Number(node.end_time_unix_nano) - t0) / 1e6,
      markers: markers(node),
      childCount: 0,
      handoff: type === "handoff" ? handoffOf(node) : null,
    };
    if (row.handoff) {
      noteAgent(row.handoff.source);
      noteAgent(row.handoff.target);
    }
    if (parent >= 0) rows[parent].childCount += 1;
    rows.push(row);
    latest[depth] = index;
  }
  // Agents named only on non-agent spans still get a colour (after the agent spans' order).
  for (const r of rows) noteAgent(r.agent);
  return { traceId: trace.trace_id, rows, durationMs: (t1 - t0) / 1e6, t0, agents: agentsSeen, totals: totals(rows), graph: graph(rows) };
}

function totals(rows) {
  const t = { spans: rows.length, errors: 0, llm: 0, tools: 0, handoffs: 0, gates: 0, loops: 0, inputTokens: 0, outputTokens: 0, agentRuns: 0 };
  for (const r of rows) {
    if (r.span.status?.code === "ERROR") t.errors += 1;
    if (r.type === "llm") {
      t.llm += 1;
      const k = tokens(r.span);
      t.inputTokens += k.input || 0;
      t.outputTokens += k.output || 0;
    } else if (r.type === "tool") t.tools += 1;
    else if (r.type === "handoff") t.handoffs += 1;
    else if (r.type === "agent") t.agentRuns += 1;
    for (const m of r.markers) {
      if (m.kind === "gate") t.gates += 1;
      if (m.kind === "loop") t.loops += 1;
    }
  }
  return t;
}

/** Agents as nodes, handoffs (source → target) as edges, with outcomes and hops. */
function graph(rows) {
  const nodes = new Map();
  const node = (name) => {
    const key = String(name);
    if (!nodes.has(key)) nodes.set(key, { id: key, runs: 0, errors: 0, inputTokens: 0, outputTokens: 0, first: Infinity });
    return nodes.get(key);
  };
  const edges = new Map();
  for (const r of rows) {
    if (r.type === "agent" && r.agent !== null) {
      const v = node(r.agent);
      v.runs += 1;
      if (r.span.status?.code === "ERROR") v.errors += 1;
      v.first = Math.min(v.first, r.start);
    } else if (r.type === "llm" && r.agent !== null) {
      const v = node(r.agent);
      const k = tokens(r.span);
      v.inputTokens += k.input || 0;
      v.outputTokens += k.output || 0;
    } else if (r.handoff) {
      const { source, target } = r.handoff;
      const from = node(source ?? "?");
      const to = node(target ?? "?");
      from.first = Math.min(from.first, r.start);
      to.first = Math.min(to.first, r.start + 1e-9);
      const key = `${from.id}\u0000${to.id}`;
      if (!edges.has(key)) edges.set(key, { source: from.id, target: to.id, count: 0, statuses: {}, inferred: 0, hops: [], loop: false, rows: [] });
      const e = edges.get(key);
      e.count += 1;
      const status = r.handoff.status || "unknown";
      e.statuses[status] = (e.statuses[status] || 0) + 1;
      if (r.handoff.inferred) e.inferred += 1;
      if (r.handoff.hop !== null) e.hops.push(r.handoff.hop);
      if (r.handoff.loop || r.markers.some((m) => m.kind === "loop")) e.loop = true;
      e.rows.push(r.index);
    }
  }
  const list = [...nodes.values()].sort((a, b) => a.first - b.first || a.id.localeCompare(b.id));
  return { nodes: list, edges: [...edges.values()] };
}

/** The rows shown when the spans in `collapsed` (row indexes) hide their subtrees. */
export function visibleRows(rows, collapsed) {
  if (!collapsed.size) return rows;
  const out = [];
  let skipDepth = -1;
  for (const r of rows) {
    if (skipDepth >= 0) {
      if (r.depth > skipDepth) continue;
      skipDepth = -1;
    }
    out.push(r);
    if (collapsed.has(r.index) && r.childCount) skipDepth = r.depth;
  }
  return out;
}

/** Chat messages from a captured `gen_ai.*.messages` value (JSON text or an array); null if none. */
export function messages(value) {
  let v = value;
  if (typeof v === "string") {
    try {
      v = JSON.parse(v);
    } catch {
      return [{ role: "text", parts: [{ type: "text", content: value }] }];
    }
  }
  if (!Array.isArray(v)) return null;
  return v.map((m) => {
    if (!m || typeof m !== "object") return { role: "?", parts: [{ type: "text", content: String(m) }] };
    let parts = m.parts ?? m.content;
    if (typeof parts === "string") parts = [{ type: "text", content: parts }];
    if (!Array.isArray(parts)) parts = parts === undefined || parts === null ? [] : [parts];
    return { role: String(m.role ?? "?"), parts, finish: m.finish_reason ?? null };
  });
}

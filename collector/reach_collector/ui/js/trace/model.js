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

// Deeper chains are attached at this depth, as the collector's nested tree does.
export const MAX_TREE_DEPTH = 128;

/**
 * The tree of `spans` (ordered by start time, then span id) from their `parent_span_id`, as the
 * collector nests `roots`: the top-level spans (orphans first, then spans on a parent cycle) and each
 * span's children (`children[i]`, absent for a leaf), as indexes into `spans` in start order.
 * Iterative, on typed arrays: a trace of 10 000 spans takes a few milliseconds.
 */
export function spanTree(spans) {
  const n = spans.length;
  const byId = new Map();
  const kept = new Uint8Array(n); // 0: a duplicate id, the first one stands
  for (let i = 0; i < n; i++) {
    const id = spans[i].span_id;
    if (!byId.has(id)) {
      byId.set(id, i);
      kept[i] = 1;
    }
  }
  const parent = new Int32Array(n).fill(-1);
  const count = new Int32Array(n);
  const tops = [];
  for (let i = 0; i < n; i++) {
    if (!kept[i]) continue;
    const s = spans[i];
    const p = s.parent_span_id;
    const pi = p === null || p === undefined || p === s.span_id ? undefined : byId.get(p);
    if (pi === undefined) tops.push(i);
    else {
      parent[i] = pi;
      count[pi] += 1;
    }
  }
  // The spans naming span i as parent, in start order: kids[first[i]] .. kids[first[i + 1] - 1].
  const first = new Int32Array(n + 1);
  for (let i = 0; i < n; i++) first[i + 1] = first[i] + count[i];
  const kids = new Int32Array(first[n]);
  const fill = first.slice(0, n);
  for (let i = 0; i < n; i++) if (parent[i] >= 0) kids[fill[parent[i]]++] = i;

  const children = new Array(n);
  const placed = new Uint8Array(n);
  const resort = new Set(); // holders given the children of a span past the depth cap
  const roots = [];
  // [span index, the index that receives its children, depth]
  const stackAt = new Int32Array(n);
  const stackHolder = new Int32Array(n);
  const stackDepth = new Int32Array(n);
  const attach = (root) => {
    roots.push(root);
    placed[root] = 1;
    stackAt[0] = root;
    stackHolder[0] = root;
    stackDepth[0] = 0;
    let top = 1;
    while (top) {
      top -= 1;
      const i = stackAt[top];
      const depth = stackDepth[top];
      const target = depth < MAX_TREE_DEPTH ? i : stackHolder[top];
      if (target !== i) resort.add(target);
      for (let k = first[i]; k < first[i + 1]; k++) {
        const c = kids[k];
        if (placed[c]) continue;
        placed[c] = 1;
        (children[target] ??= []).push(c);
        stackAt[top] = c;
        stackHolder[top] = target;
        stackDepth[top] = depth + 1;
        top += 1;
      }
    }
  };
  for (const i of tops) attach(i);
  // Spans on a parent cycle were never reached from a top-level span: they become roots.
  for (let i = 0; i < n; i++) if (kept[i] && !placed[i]) attach(i);
  for (const t of resort) children[t]?.sort((a, b) => a - b);
  return { roots, children };
}

/** Build the page model from `spans` (the tree from `parent_span_id`; `roots` is not needed). */
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
  // [span index, depth, inherited agent, parent row index]
  const tree = spanTree(spans);
  const stack = [];
  for (let i = tree.roots.length - 1; i >= 0; i--) stack.push([tree.roots[i], 0, null, -1]);
  while (stack.length) {
    const [at, depth, inherited, parent] = stack.pop();
    const node = spans[at];
    const type = spanType(node);
    const own = node.agent ?? attr(node, n.GEN_AI_AGENT_NAME) ?? attr(node, n.REACH_AGENT_NAME) ?? null;
    const agent = own ?? inherited;
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
    const children = tree.children[at] || [];
    for (let i = children.length - 1; i >= 0; i--) stack.push([children[i], depth + 1, agent, index]);
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

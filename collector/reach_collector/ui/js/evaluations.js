// Evaluations (SPEC §18): the one rule that calls a verdict good or bad, and the small pieces the
// trace page, the Agents page and the Conversations page draw evaluations with. Every name, label
// and explanation comes from a span's evaluator and is text, never markup.

import { h } from "./dom.js";
import * as fmt from "./format.js";

/** Labels that read as a good verdict; any other label is a bad one. */
export const GOOD_LABELS = new Set(["correct", "good", "pass", "positive", "resolved", "yes"]);
/** With no label, a score at or above this is good. */
export const MIN_GOOD_SCORE = 0.5;

function numberOrNull(v) {
  const x = typeof v === "string" && v.trim() !== "" ? Number(v) : v;
  return typeof x === "number" && Number.isFinite(x) ? x : null;
}

/** A label's verdict: "good" or "bad" (labels only; see verdict for a whole evaluation). */
export function labelVerdict(label) {
  return GOOD_LABELS.has(String(label).trim().toLowerCase()) ? "good" : "bad";
}

/**
 * An evaluation's verdict: "good" when its label is one of GOOD_LABELS, "bad" for any other label;
 * with no label, "good" when its score is at least MIN_GOOD_SCORE, else "bad"; "none" with neither.
 */
export function verdict(ev) {
  const label = ev?.label;
  if (label !== null && label !== undefined && String(label).trim() !== "") return labelVerdict(label);
  const score = numberOrNull(ev?.score);
  if (score === null) return "none";
  return score >= MIN_GOOD_SCORE ? "good" : "bad";
}

/** {good, bad, none, total} over a list of evaluations. */
export function tally(evaluations) {
  const out = { good: 0, bad: 0, none: 0, total: 0 };
  for (const ev of evaluations || []) {
    out[verdict(ev)] += 1;
    out.total += 1;
  }
  return out;
}

export const GLYPH = { good: "✓", bad: "✗", none: "•" };

/** An evaluation in one line of text: "correctness: incorrect (score 0)". */
export function describe(ev) {
  const score = numberOrNull(ev?.score);
  const parts = [ev?.label !== null && ev?.label !== undefined ? String(ev.label) : null, score !== null ? `score ${fmt.num(score, 3)}` : null].filter(Boolean);
  return `${String(ev?.name ?? "evaluation")}${parts.length ? `: ${parts.join(", ")}` : ""}`;
}

/**
 * The badge a span's row carries: one evaluation → "✓ name" / "✗ name"; several → their count,
 * bad when any is bad. Its title lists each one.
 */
export function evalBadge(evaluations) {
  const list = evaluations || [];
  if (!list.length) return null;
  const t = tally(list);
  const title = list.map((ev) => `${GLYPH[verdict(ev)]} ${describe(ev)}`).join("\n");
  if (list.length === 1) {
    const v = verdict(list[0]);
    return h("span", { class: `badge eval ${v}`, title, "data-verdict": v, text: `${GLYPH[v]} ${String(list[0].name ?? "evaluation")}` });
  }
  const v = t.bad ? "bad" : t.good ? "good" : "none";
  const text = t.bad && t.good ? `✓${t.good} ✗${t.bad}` : `${GLYPH[v]} ${list.length} evals`;
  return h("span", { class: `badge eval ${v}`, title, "data-verdict": v, text });
}

/**
 * Label shares as a small stacked bar: one segment per label, good labels green and bad ones red
 * (in shades, so neighbours differ), the counts written beside it.
 */
export function labelBar(labels, total) {
  const entries = Object.entries(labels || {}).sort(([a, x], [b, y]) => {
    const va = labelVerdict(a) === "good" ? 0 : 1;
    const vb = labelVerdict(b) === "good" ? 0 : 1;
    return va - vb || y - x || a.localeCompare(b);
  });
  const counted = entries.reduce((sum, [, c]) => sum + Number(c || 0), 0);
  const whole = Math.max(counted, Number(total) || 0, 1);
  const shade = { good: 0, bad: 0 };
  const bar = h("span", { class: "labelbar", role: "img" });
  const words = [];
  for (const [label, count] of entries) {
    const v = labelVerdict(label);
    const seg = h("span", { class: `seg ${v} shade-${Math.min(shade[v]++, 2)}`, title: `${label}: ${count}` });
    seg.style.width = `${(Number(count) / whole) * 100}%`;
    bar.append(seg);
    words.push(`${label} ${fmt.int(count)}`);
  }
  const unlabelled = Math.max(0, (Number(total) || 0) - counted);
  if (unlabelled) words.push(`no label ${fmt.int(unlabelled)}`);
  bar.setAttribute("aria-label", words.join(", ") || "no labels");
  return h("span", { class: "labels" }, bar, h("span", { class: "labels-text", text: words.join(" · ") || "no labels" }));
}

// The trace timeline: one row per span in tree order, bars on a shared time axis, coloured by
// agent. Virtualised: only the rows in view (plus a margin) exist in the DOM, recycled on scroll,
// so a trace of 10 000 spans scrolls as lightly as one of ten.

import { breakable, h } from "../dom.js";
import { evalBadge } from "../evaluations.js";
import * as fmt from "../format.js";
import { TYPES, tokens, visibleRows } from "./model.js";

export const ROW_HEIGHT = 26;
const OVERSCAN = 12;
const INDENT = 13;
const MAX_INDENT_DEPTH = 12;
const LABEL_WIDTH = 340; // --label-w in console.css
const LANE_MARGIN = 150; // .wf-lane's right margin: room for the text after a bar ending late

function niceStep(total, count = 6) {
  const raw = total / count;
  if (!(raw > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 2.5, 5, 10]) if (raw <= m * power) return m * power;
  return 10 * power;
}

/** The text beside a row's bar, and a shorter one (no duration) for where that does not fit. */
function barText(row) {
  const parts = [];
  if (row.handoff) {
    const h = row.handoff;
    const target = String(h.target ?? "?");
    if (!String(row.span.name ?? "").includes(target)) parts.push(`→ ${target}`);
    if (h.status) parts.push(h.inferred ? `${h.status} (inferred)` : h.status);
    if (h.hop !== null) parts.push(`hop ${h.hop}`);
  } else if (row.type === "llm") {
    const k = tokens(row.span);
    if (k.input !== null || k.output !== null) parts.push(`${fmt.int(k.input || 0)} → ${fmt.int(k.output || 0)} tok`);
  }
  for (const m of row.markers) if (m.kind === "gate") parts.push(`⚠ ${m.text}`);
  const full = [...parts, fmt.duration(row.span.duration_ms)].join(" · ");
  return { full, short: parts.length ? parts.join(" · ") : full };
}

export class Waterfall {
  /**
   * @param model   buildModel() output
   * @param colors  AgentColors
   * @param onSelect called with a row when one is chosen
   * @param cause   a failed trace's cause: the span ids of its path (root first) and its origin
   */
  constructor(model, colors, onSelect, { path = [], origin = null } = {}) {
    this.model = model;
    this.path = new Set(path);
    this.origin = origin;
    this.colors = colors;
    this.onSelect = onSelect;
    this.collapsed = new Set();
    this.rows = model.rows;
    this.selected = -1;
    this.pool = [];
    this.unplaced = [];
    this.total = Math.max(model.durationMs, 1e-6);
    this.frame = 0;

    this.spacer = h("div", { class: "wf-spacer" });
    this.grid = h("div", { class: "wf-grid", "aria-hidden": "true" });
    this.body = h("div", { class: "wf-body", tabindex: "0", role: "tree", "aria-label": "spans" }, this.spacer);
    this.axis = h("div", { class: "wf-axis" });
    this.count = h("span", { class: "wf-count" });
    this.el = h(
      "div",
      { class: "wf", id: "waterfall" },
      h("div", { class: "wf-head" }, h("div", { class: "wf-head-label" }, h("span", { text: "Span" }), this.count), this.axis),
      h("div", { class: "wf-viewport" }, this.grid, this.body),
    );
    this.drawAxis();
    this.body.addEventListener("scroll", () => this.schedule(), { passive: true });
    this.body.addEventListener("keydown", (e) => this.key(e));
    this.resizer = new ResizeObserver(() => {
      this.lane = 0;
      for (const slot of this.pool) slot.index = -1;
      this.schedule();
    });
    this.resizer.observe(this.body);
    this.relayout();
  }

  /** Mark a failed trace's cause: the span ids of its path (root first) and its origin. */
  markCause(path, origin) {
    this.path = new Set(path);
    this.origin = origin;
    for (const slot of this.pool) if (slot.index >= 0) this.fill(slot, slot.index);
    this.place();
  }

  destroy() {
    this.resizer.disconnect();
    cancelAnimationFrame(this.frame);
  }

  drawAxis() {
    const step = niceStep(this.total);
    this.axis.replaceChildren();
    this.grid.replaceChildren();
    for (let t = 0; t <= this.total + step * 1e-9; t += step) {
      const left = `${(t / this.total) * 100}%`;
      // A tick at the very end gets its gridline but no label: a label there would run past the
      // lane, or, pulled back inside it, onto the label before (the total is in the header).
      if (t / this.total <= 0.94) {
        const tick = h("span", { class: "tick", text: fmt.duration(t) });
        tick.style.left = left;
        this.axis.append(tick);
      }
      const line = h("span", { class: "gridline" });
      line.style.left = left;
      this.grid.append(line);
    }
  }

  relayout() {
    this.visible = visibleRows(this.rows, this.collapsed);
    // Row index → its line among the visible rows (-1: under a collapsed span).
    this.positions = new Int32Array(this.rows.length).fill(-1);
    this.visible.forEach((r, i) => {
      this.positions[r.index] = i;
    });
    this.spacer.style.height = `${this.visible.length * ROW_HEIGHT}px`;
    this.count.textContent = `${fmt.int(this.visible.length)} of ${fmt.int(this.rows.length)}`;
    for (const slot of this.pool) slot.index = -1;
    this.render();
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  render() {
    const height = this.body.clientHeight || 600;
    const first = Math.max(0, Math.floor(this.body.scrollTop / ROW_HEIGHT) - OVERSCAN);
    const last = Math.min(this.visible.length, Math.ceil((this.body.scrollTop + height) / ROW_HEIGHT) + OVERSCAN);
    const need = last - first;
    while (this.pool.length < need) {
      const slot = this.makeRow();
      this.pool.push(slot);
      this.spacer.append(slot.el);
    }
    const size = this.pool.length;
    for (let i = first; i < last; i++) {
      const slot = this.pool[i % size]; // a contiguous range maps to distinct slots
      slot.el.hidden = false;
      if (slot.index !== i) this.fill(slot, i);
    }
    for (const slot of this.pool) {
      if (slot.index < first || slot.index >= last) {
        slot.el.hidden = true;
        slot.index = -1;
      }
    }
    this.place();
  }

  makeRow() {
    const toggle = h("button", { class: "tw", type: "button", tabindex: "-1", "aria-label": "collapse" });
    const icon = h("span", { class: "ticon" });
    const name = h("span", { class: "name" });
    const badges = h("span", { class: "badges" });
    const stripe = h("span", { class: "stripe" });
    const label = h("div", { class: "wf-label" }, stripe, toggle, icon, name, badges);
    const bar = h("div", { class: "bar" });
    const marks = h("div", { class: "marks" });
    const text = h("span", { class: "bar-text" });
    const lane = h("div", { class: "wf-lane" }, bar, marks, text);
    const el = h("div", { class: "wf-row", role: "treeitem" }, label, lane);
    const slot = { el, label, toggle, icon, name, badges, stripe, bar, marks, text, lane, index: -1, row: null, left: 0, after: 0 };
    toggle.addEventListener("click", (e) => {
      e.stopPropagation();
      if (slot.row) this.toggle(slot.row.index);
    });
    el.addEventListener("click", () => slot.row && this.select(slot.row.index));
    return slot;
  }

  fill(slot, i) {
    const row = this.visible[i];
    slot.index = i;
    slot.row = row;
    const span = row.span;
    const colour = this.colors.get(row.agent);
    const error = span.status?.code === "ERROR";
    const origin = this.origin !== null && span.span_id === this.origin;
    const onPath = this.path.has(span.span_id);
    slot.el.className = `wf-row t-${row.type}${error ? " error" : ""}${onPath ? " on-path" : ""}${origin ? " origin" : ""}${row.index === this.selected ? " selected" : ""}`;
    slot.el.style.transform = `translateY(${i * ROW_HEIGHT}px)`;
    slot.el.dataset.index = String(row.index);
    slot.el.dataset.spanId = String(span.span_id);
    slot.el.setAttribute("aria-level", String(row.depth + 1));
    slot.el.setAttribute("aria-selected", row.index === this.selected ? "true" : "false");
    slot.label.style.paddingLeft = `${6 + Math.min(row.depth, MAX_INDENT_DEPTH) * INDENT}px`;
    slot.stripe.style.backgroundColor = colour;
    slot.toggle.style.visibility = row.childCount ? "visible" : "hidden";
    slot.toggle.textContent = this.collapsed.has(row.index) ? "▸" : "▾";
    slot.icon.textContent = TYPES[row.type].icon;
    slot.icon.title = TYPES[row.type].label;
    slot.name.replaceChildren(...breakable(String(span.name ?? "")));
    slot.name.title = `${span.name ?? ""}${row.agent ? ` — ${row.agent}` : ""}`;
    slot.badges.replaceChildren();
    for (const m of row.markers) {
      if (origin && m.kind === "error") {
        // The origin's error badge says so: the failure began here.
        slot.badges.append(h("span", { class: "badge origin", title: `the trace's failure began here: ${m.text}`, text: "✗ origin" }));
        continue;
      }
      const glyph = m.kind === "error" ? "✗" : m.kind === "gate" ? "⚠" : m.kind === "loop" ? "⟳" : "⤒";
      slot.badges.append(h("span", { class: `badge ${m.kind}`, title: `${m.kind}: ${m.text}`, text: glyph }));
    }
    if (origin && !row.markers.some((m) => m.kind === "error")) {
      slot.badges.append(h("span", { class: "badge origin", title: "the trace's failure began here", text: "origin" }));
    }
    const judged = evalBadge(span.evaluations);
    if (judged) slot.badges.append(judged);
    const left = Math.min(100, Math.max(0, (row.start / this.total) * 100));
    const width = Math.max(0, ((row.end - row.start) / this.total) * 100);
    slot.bar.style.left = `${left}%`;
    slot.bar.style.width = `max(3px, ${Math.min(width, 100 - left)}%)`;
    slot.bar.style.backgroundColor = colour;
    slot.bar.style.borderColor = colour;
    slot.marks.replaceChildren();
    for (const m of row.markers) {
      if (m.kind !== "gate" || m.time === undefined) continue;
      const at = ((Number(m.time) - this.model.t0) / 1e6 / this.total) * 100;
      const mark = h("span", { class: "mark gate", title: `gate ${m.text}`, text: "⚠" });
      mark.style.left = `${Math.min(100, Math.max(0, at))}%`;
      slot.marks.append(mark);
    }
    const { full: text, short } = barText(row);
    slot.text.textContent = text;
    slot.short = short;
    slot.lane.title = text; // the whole text on hover, where place() had to shorten it
    // After the bar (at least its 3px) for now; place() moves it before the bar where it does not
    // fit after, and shortens it where it fits on neither side: beside the bar, never over it.
    slot.after = left + Math.min(width, 100 - left);
    slot.left = left;
    slot.text.classList.remove("before");
    slot.text.style.right = "";
    slot.text.style.maxWidth = "";
    slot.text.style.left = `max(${slot.after}%, calc(${left}% + 3px))`;
    this.unplaced.push(slot);
  }

  /** Text beside the bars just filled: all widths read in one layout, then all positions written. */
  place() {
    if (!this.unplaced.length) return;
    const lane = this.laneWidth();
    const widths = this.unplaced.map((slot) => slot.text.offsetWidth);
    this.unplaced.forEach((slot, k) => {
      let needed = widths[k];
      const after = ((100 - slot.after) / 100) * lane + LANE_MARGIN - 3;
      const before = (slot.left / 100) * lane + 8; // up to the lane's left margin
      if (needed <= after) return;
      if (needed > Math.max(before, after) && slot.short !== slot.text.textContent) {
        // Neither side has room for all of it: the text without its duration, when that fits.
        const shorter = (needed * slot.short.length) / slot.text.textContent.length + 4;
        if (shorter <= Math.max(before, after)) {
          slot.text.textContent = slot.short;
          needed = shorter;
          if (needed <= after) return;
        }
      }
      if (needed <= before || before > after) {
        slot.text.classList.add("before");
        slot.text.style.left = "";
        slot.text.style.right = `${100 - slot.left}%`;
      }
      if (needed > Math.max(before, after)) slot.text.style.maxWidth = `${Math.floor(Math.max(before, after))}px`;
    });
    this.unplaced = [];
  }

  laneWidth() {
    if (!this.lane) this.lane = Math.max(100, this.body.clientWidth - LABEL_WIDTH - LANE_MARGIN - 8);
    return this.lane;
  }

  toggle(index) {
    if (this.collapsed.has(index)) this.collapsed.delete(index);
    else this.collapsed.add(index);
    this.relayout();
  }

  /** Select a row by its index in the model (expanding collapsed ancestors) and scroll to it. */
  select(index, { scroll = false } = {}) {
    if (index < 0 || index >= this.rows.length) return;
    let p = this.rows[index].parent;
    let expanded = false;
    while (p >= 0) {
      if (this.collapsed.delete(p)) expanded = true;
      p = this.rows[p].parent;
    }
    this.selected = index;
    if (expanded) this.relayout();
    if (scroll) this.scrollTo(index);
    for (const slot of this.pool) if (slot.index >= 0) this.fill(slot, slot.index);
    this.place();
    this.onSelect(this.rows[index]);
  }

  scrollTo(index) {
    const at = this.positions[index] ?? -1;
    if (at < 0) return;
    const top = at * ROW_HEIGHT;
    const view = this.body.clientHeight;
    if (top < this.body.scrollTop || top + ROW_HEIGHT > this.body.scrollTop + view) {
      this.body.scrollTop = Math.max(0, top - view / 3);
    }
    this.render();
  }

  key(event) {
    const at = this.positions[this.selected] ?? -1;
    let next = null;
    if (event.key === "ArrowDown" || event.key === "j") next = at < 0 ? 0 : Math.min(this.visible.length - 1, at + 1);
    else if (event.key === "ArrowUp" || event.key === "k") next = at < 0 ? 0 : Math.max(0, at - 1);
    else if ((event.key === "ArrowLeft" || event.key === "ArrowRight") && this.selected >= 0) {
      const row = this.rows[this.selected];
      const collapse = event.key === "ArrowLeft";
      if (row.childCount && collapse !== this.collapsed.has(row.index)) this.toggle(row.index);
      event.preventDefault();
      return;
    }
    if (next === null || !this.visible.length) return;
    event.preventDefault();
    this.select(this.visible[next].index, { scroll: true });
  }
}

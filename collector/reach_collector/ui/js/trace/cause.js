// A failed trace's cause in one line (GET /api/traces/{id}/cause, SPEC §17): where the failure
// began — its kind, name, agent, error type and message —, the agents that never ran, and what
// the trace wasted. A trace that did not fail has no line. Every value is text.

import { causeName, kindPill, wasteText } from "../causes.js";
import { h } from "../dom.js";
import * as fmt from "../format.js";
import { agentChip } from "../pages/traces.js";

/** The line for `cause` (null when the trace did not fail); `onOrigin` selects the origin span. */
export function causeLine(cause, colors, onOrigin) {
  if (!cause?.failed || !cause.origin) return null;
  const o = cause.origin;
  const never = (cause.never_ran || []).map(String);
  const w = cause.wasted || {};
  const message = o.message === null || o.message === undefined ? "" : String(o.message);
  const show = h("button", { type: "button", class: "small origin-button", title: "select the span where the failure began", text: "show span ↓" });
  const line = h(
    "div",
    { class: "cause-line", id: "cause", "data-origin": String(o.span_id ?? ""), title: "where this trace's failure began" },
    h("span", { class: "cause-label", text: "Cause" }),
    kindPill(o.kind),
    h("strong", { class: "mono cause-name", text: causeName(o.kind, o.name) }),
    o.agent ? h("span", { class: "cause-in" }, "in ", agentChip(o.agent, colors)) : null,
    o.error_type || message
      ? h(
          "span",
          { class: "cause-error", title: [o.error_type, message].filter(Boolean).join(": ") },
          o.error_type ? h("span", { class: "mono error-type", text: String(o.error_type) }) : null,
          o.error_type && message ? ": " : null,
          message ? h("span", { class: "cause-message", text: message }) : null,
        )
      : null,
    never.length ? h("span", { class: "never-ran", text: `${never.join(", ")} never ran` }) : null,
    h(
      "span",
      { class: "cause-waste", title: `spent after the failure began and in failed branches: ${fmt.int(w.input_tokens || 0)} input → ${fmt.int(w.output_tokens || 0)} output tokens` },
      h("span", { class: "muted", text: "wasted " }),
      wasteText(w),
    ),
    show,
  );
  line.addEventListener("click", (event) => {
    if (event.target.closest("a")) return;
    onOrigin();
  });
  return line;
}

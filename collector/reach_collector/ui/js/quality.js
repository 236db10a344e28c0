// The Agents page's Quality panel (SPEC §18): per agent and per evaluation, how many evaluations
// the window holds, their mean score and the shares of their labels, from
// GET /api/metrics/quality?by=agent and ?by=evaluation. Good and bad are evaluations.js's rule.

import { h, notice } from "./dom.js";
import { labelBar } from "./evaluations.js";
import * as fmt from "./format.js";

function score(value) {
  return value === null || value === undefined ? h("span", { class: "muted", text: "–" }) : fmt.num(value, 3);
}

function table(id, first, groups, keyCell) {
  return h(
    "table",
    { class: "grid quality", id },
    h("thead", null, h("tr", null, h("th", { scope: "col", text: first }), h("th", { scope: "col", class: "num", text: "Evaluations" }), h("th", { scope: "col", class: "num", text: "Mean score" }), h("th", { scope: "col", text: "Labels" }))),
    h(
      "tbody",
      null,
      groups.map((g) =>
        h(
          "tr",
          { "data-key": g.key === null || g.key === undefined ? "" : String(g.key) },
          h("td", null, keyCell(g.key)),
          h("td", { class: "num" }, fmt.int(g.evaluations)),
          h("td", { class: "num" }, score(g.mean_score)),
          h("td", null, labelBar(g.labels, g.evaluations)),
        ),
      ),
    ),
  );
}

/**
 * The Quality card. ``byAgent`` and ``byEvaluation`` are the API's answers (or {error}); ``only``
 * narrows the agents' table to one agent; ``agentCell`` draws an agent's name (its coloured chip).
 */
export function qualityCard(byAgent, byEvaluation, { window, only = null, agentCell }) {
  const head = h("h2", { text: `Quality: evaluations per agent — last ${window}` });
  if (byAgent?.error || byEvaluation?.error) {
    return h("section", { class: "card", id: "quality" }, head, notice(byAgent?.error || byEvaluation?.error, "error"));
  }
  const agents = (byAgent?.groups || []).filter((g) => !only || String(g.key) === only);
  const evaluations = byEvaluation?.groups || [];
  if (!agents.length && !evaluations.length) {
    return h(
      "section",
      { class: "card", id: "quality" },
      head,
      notice(`No evaluations in the last ${window}. Record them with reach_otel.evaluate(), reach_otel.feedback() or POST /api/feedback.`),
    );
  }
  return h(
    "section",
    { class: "card", id: "quality" },
    head,
    agents.length
      ? table("quality-agents", "Agent", agents, (key) => (key === null || key === undefined ? h("span", { class: "muted", text: "(no agent)" }) : agentCell(key)))
      : notice(only ? `No evaluations of ${only}'s spans in the last ${window}.` : `No evaluated agent spans in the last ${window}.`),
    h("h3", { class: "sub", text: "By evaluation" }),
    evaluations.length ? table("quality-evaluations", "Evaluation", evaluations, (key) => h("span", { class: "mono", text: String(key ?? "") })) : notice("none"),
  );
}

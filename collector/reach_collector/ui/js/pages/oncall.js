// On-call: who is on call in each schedule now, why, and who is next (GET /api/oncall), a preview
// at a chosen instant (?at=ISO), and the next hand-offs after it.

import { ApiError, get } from "../api.js";
import { fill, h, notice } from "../dom.js";
import * as fmt from "../format.js";

const UPCOMING = 6;

// The preview instant as the rest of the console writes times: ISO date, 24-hour UTC time. A text
// field, not datetime-local, whose look (12-hour, month first) follows the browser's locale.
const AT_FORMAT = "YYYY-MM-DD HH:MM";
const AT_PATTERN = "\\d{4}-\\d{2}-\\d{2}[ T]\\d{2}:\\d{2}(:\\d{2})?Z?";

function toField(d) {
  return d.toISOString().slice(0, 16).replace("T", " ");
}

/** The field's text as an ISO instant (…Z), or null when it is not a real UTC date and time. */
function fromField(text) {
  const m = new RegExp(`^${AT_PATTERN}$`).test(text.trim()) ? text.trim().replace(" ", "T").replace(/Z$/, "") : null;
  if (!m) return null;
  const iso = `${m.length === 16 ? `${m}:00` : m}Z`;
  const parsed = new Date(iso);
  // 2026-02-30 or 24:10 would roll over into another instant: refused, not silently moved.
  return !Number.isNaN(parsed.getTime()) && parsed.toISOString().slice(0, 19) === iso.slice(0, 19) ? iso : null;
}

export async function render(root, ctx) {
  document.title = "On-call · reach-otel";
  const at = ctx.params.get("at") || "";
  const input = h("input", {
    id: "at",
    type: "text",
    class: "mono",
    inputmode: "numeric",
    size: "17",
    pattern: AT_PATTERN,
    placeholder: AT_FORMAT,
    title: `UTC, 24-hour: ${AT_FORMAT}`,
    value: at && !Number.isNaN(Date.parse(at)) ? toField(new Date(at)) : "",
    "aria-label": `preview time (UTC, ${AT_FORMAT})`,
  });
  input.addEventListener("input", () => input.setCustomValidity(""));
  const form = h(
    "form",
    { class: "inline", id: "preview", autocomplete: "off" },
    h("label", { for: "at", text: "Preview at (UTC)" }),
    input,
    h("button", { type: "submit", class: "primary", text: "Preview" }),
    at ? h("a", { href: "/ui/oncall", class: "link", text: "back to now" }) : null,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const value = input.value.trim() ? fromField(input.value) : "";
    if (value === null) {
      input.setCustomValidity(`a UTC date and 24-hour time, ${AT_FORMAT}`);
      input.reportValidity();
      return;
    }
    ctx.navigate(value ? `/ui/oncall?at=${encodeURIComponent(value)}` : "/ui/oncall");
  });
  const body = h("div", { id: "oncall-body", class: "stack" });
  root.append(h("div", { class: "page-head" }, h("h1", { text: "On-call" }), form), body);

  let report;
  try {
    report = await get("/api/oncall", at ? { at } : null, ctx.signal);
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    body.append(notice(e.message, "error"));
    return null;
  }
  if (!input.value && report?.at) input.value = toField(new Date(report.at)); // a start to edit
  const schedules = report?.schedules || [];
  if (!schedules.length) {
    body.append(notice("No schedules are configured (see schedules: in the collector's config file)."));
    return null;
  }
  // Each schedule's next hand-offs after the shown instant: ask again at each one in turn.
  const upcoming = new Map();
  await Promise.all(
    schedules.map(async (first) => {
      const list = [];
      let when = first.next_handoff;
      for (let i = 0; i < UPCOMING && when; i++) {
        const next = await get("/api/oncall", { at: when }, ctx.signal);
        const mine = (next?.schedules || []).find((x) => x.schedule === first.schedule);
        if (!mine) break;
        list.push({ at: when, who: mine.now, reason: mine.reason });
        when = mine.next_handoff && mine.next_handoff > when ? mine.next_handoff : null;
      }
      upcoming.set(first.schedule, list);
    }),
  );
  fill(body, 
    h("p", { class: "muted", id: "oncall-at", text: `${at ? "Preview at" : "Now:"} ${fmt.time(report.at)}` }),
    h(
      "div",
      { class: "oncall-grid" },
      schedules.map((s) =>
        h(
          "section",
          { class: "card oncall", "data-schedule": String(s.schedule) },
          h("h2", { text: String(s.schedule) }),
          h("div", { class: "who" }, h("span", { class: "who-label", text: at ? "on call then" : "on call now" }), h("span", { class: "who-name", text: String(s.now ?? "nobody") })),
          h("div", { class: "reason muted", text: s.reason ? `because: ${s.reason}` : "" }),
          h(
            "div",
            { class: "next" },
            h("span", { class: "who-label", text: "next" }),
            h("span", { class: "who-name small", text: String(s.next ?? "–") }),
            h("span", { class: "muted", text: s.next_handoff ? ` at ${fmt.time(s.next_handoff)} (${fmt.ago(s.next_handoff, Date.parse(report.at))})` : "" }),
          ),
          s.time_zone ? h("div", { class: "muted small", text: `time zone ${s.time_zone}` }) : null,
          (upcoming.get(s.schedule) || []).length
            ? h(
                "table",
                { class: "grid compact" },
                h("thead", null, h("tr", null, h("th", { text: "From (UTC)" }), h("th", { text: "On call" }), h("th", { text: "Why" }))),
                h("tbody", null, upcoming.get(s.schedule).map((x) => h("tr", null, h("td", { class: "nowrap", text: fmt.time(x.at) }), h("td", { text: String(x.who) }), h("td", { class: "muted", text: String(x.reason ?? "") })))),
              )
            : null,
        ),
      ),
    ),
  );
  return null;
}

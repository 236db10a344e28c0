// DOM building without markup: every string becomes a text node or an attribute value, never HTML.
// Values from spans are untrusted (SPEC §14); nothing here parses a string as markup.

const SVG_NS = "http://www.w3.org/2000/svg";

function apply(el, attrs) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.setAttribute("class", String(value));
    else if (key === "text") el.textContent = String(value);
    else if (key.startsWith("on")) {
      if (typeof value !== "function") throw new TypeError(`${key}: a handler must be a function`);
      el.addEventListener(key.slice(2), value);
    } else if (key === "href" && !/^(\/|#|\?)/.test(String(value))) {
      throw new TypeError("links stay inside the console");
    } else el.setAttribute(key, value === true ? "" : String(value));
  }
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** An HTML element: h("td", {class: "num"}, "12", h("span", {text: "ms"})). */
export function h(tag, attrs, ...children) {
  return append(apply(document.createElement(tag), attrs), children);
}

/** An SVG element; its text children are SVG text nodes. */
export function s(tag, attrs, ...children) {
  return append(apply(document.createElementNS(SVG_NS, tag), attrs), children);
}

/** Empty an element (no innerHTML: Trusted Types forbid it). */
export function clear(el) {
  el.replaceChildren();
  return el;
}

/** Replace an element's children, skipping null/false (optional sections). */
export function fill(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** A button that copies `value` to the clipboard and says so. */
export function copyButton(value, label = "copy") {
  const button = h("button", { class: "copy", type: "button", title: "copy to the clipboard", text: label });
  button.addEventListener("click", async (event) => {
    event.preventDefault();
    event.stopPropagation();
    let ok = false;
    try {
      await navigator.clipboard.writeText(value);
      ok = true;
    } catch {
      // No clipboard permission (an embedded or headless browser): select the text instead.
      const area = h("textarea", { class: "offscreen", readonly: true });
      area.value = value;
      document.body.append(area);
      area.select();
      try {
        ok = document.execCommand("copy");
      } catch {
        ok = false;
      }
      area.remove();
    }
    button.textContent = ok ? "copied" : "select";
    setTimeout(() => (button.textContent = label), 1200);
  });
  return button;
}

// Where a name may break across lines: after a dot, underscore, slash, colon or hyphen, and
// between a lower-case letter and a capital (BillingAgent), so no line ends inside a word.
const BREAK_AFTER = /([._/:-]+|[a-z0-9](?=[A-Z]))/g;

/** ``text`` as text nodes with a line-break opportunity (<wbr>) at each word or dot boundary. */
export function breakable(text) {
  const out = [];
  let at = 0;
  for (const m of String(text).matchAll(BREAK_AFTER)) {
    const end = m.index + m[0].length;
    if (end >= text.length) break;
    out.push(document.createTextNode(text.slice(at, end)), document.createElement("wbr"));
    at = end;
  }
  out.push(document.createTextNode(String(text).slice(at)));
  return out;
}

/** A key → value table; values that are not strings are shown as JSON text. Keys wrap at their
 * dots and underscores, never inside a word, and show whole on hover. */
export function kvTable(entries, empty = "none") {
  const rows = entries.map(([key, value]) =>
    h("tr", null, h("th", { scope: "row", title: String(key) }, breakable(String(key))), h("td", null, valueNode(value))),
  );
  if (!rows.length) return h("p", { class: "muted", text: empty });
  return h("table", { class: "kv" }, h("tbody", null, rows));
}

export function valueNode(value) {
  if (typeof value === "string") return h("span", { class: "v-str", text: value });
  if (typeof value === "number" || typeof value === "boolean") return h("span", { class: "v-num", text: String(value) });
  if (value === null || value === undefined) return h("span", { class: "muted", text: "null" });
  return h("pre", { class: "v-json", text: JSON.stringify(value, null, 2) });
}

/** A <section> with a heading. */
export function section(title, ...children) {
  return h("section", { class: "card" }, h("h2", { text: title }), ...children);
}

export function notice(text, kind = "info") {
  return h("div", { class: `notice ${kind}`, role: kind === "error" ? "alert" : "status", text });
}

// The console's shell: routes /ui/* to a page module, intercepts in-console links (history API),
// and shows the sign-in field when the API asks for the query token. Pages render only what the
// API returned; with auth on, nothing is shown before the token is accepted.

import { AuthNeeded, setToken, token } from "./api.js";
import { clear, h, notice } from "./dom.js";
import * as agents from "./pages/agents.js";
import * as alerts from "./pages/alerts.js";
import * as conversations from "./pages/conversations.js";
import * as oncall from "./pages/oncall.js";
import * as topology from "./pages/topology.js";
import * as trace from "./pages/trace.js";
import * as traces from "./pages/traces.js";

const ROUTES = [
  [/^\/ui\/traces\/?$/, traces, "traces"],
  [/^\/ui\/trace\/([0-9A-Za-z]{1,64})\/?$/, trace, "traces"],
  [/^\/ui\/agents\/?$/, agents, "agents"],
  [/^\/ui\/conversations\/?$/, conversations, "conversations"],
  [/^\/ui\/conversations\/([^/]{1,1024})\/?$/, conversations, "conversations"],
  [/^\/ui\/topology\/?$/, topology, "topology"],
  [/^\/ui\/alerts\/?$/, alerts, "alerts"],
  [/^\/ui\/oncall\/?$/, oncall, "oncall"],
];

const main = document.getElementById("main");
let current = null; // {controller, timers, cleanup}

function navigate(url, { replace = false } = {}) {
  if (replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  route();
}

function stop() {
  if (!current) return;
  current.controller.abort();
  for (const t of current.timers) clearInterval(t);
  if (typeof current.cleanup === "function") current.cleanup();
  current = null;
}

function showSignIn(error) {
  stop();
  document.title = "Sign in · reach-otel";
  const input = h("input", {
    id: "token",
    name: "token",
    type: "password",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
    placeholder: "query token",
    "aria-label": "query token",
  });
  const form = h(
    "form",
    { class: "signin card", id: "signin", autocomplete: "off" },
    h("h1", { text: "Sign in" }),
    h("p", {
      text: "This collector asks for its query token (auth.query_token in its config, or REACH_QUERY_TOKEN). It stays in this browser tab and is sent only as an Authorization header.",
    }),
    error ? notice(error.message, "error") : null,
    h("label", { for: "token", text: "Query token" }),
    input,
    h("button", { type: "submit", class: "primary", text: "Sign in" }),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault(); // never a GET with the token in the query string
    const value = input.value.trim();
    input.value = "";
    if (!value) return;
    setToken(value);
    renderSession();
    route();
  });
  clear(main).append(form);
  input.focus();
}

function renderSession() {
  const box = clear(document.getElementById("session"));
  if (!token()) return;
  box.append(
    h("span", { class: "muted", text: "signed in" }),
    h("button", {
      type: "button",
      class: "link",
      text: "sign out",
      onclick: () => {
        setToken(null);
        renderSession();
        route();
      },
    }),
  );
}

async function route() {
  stop();
  delete document.body.dataset.ready;
  const path = location.pathname;
  if (/^\/ui\/?$/.test(path) || path === "/") {
    history.replaceState(null, "", "/ui/traces" + location.search);
    return route();
  }
  const found = ROUTES.find(([re]) => re.test(path));
  for (const a of document.querySelectorAll("#nav a")) {
    a.classList.toggle("active", Boolean(found) && a.dataset.page === found[2]);
  }
  clear(main);
  if (!found) {
    main.append(notice(`No console page at ${path}.`, "error"));
    return;
  }
  const [re, page] = found;
  const match = path.match(re);
  const state = { controller: new AbortController(), timers: [], cleanup: null };
  current = state;
  const ctx = {
    params: new URLSearchParams(location.search),
    id: match[1],
    signal: state.controller.signal,
    navigate,
    // Re-run fn every ms until the page is left; an auth failure there shows the sign-in.
    run: (fn) => guard(fn),
    every(ms, fn) {
      state.timers.push(setInterval(() => guard(fn), ms));
    },
    setQuery(params) {
      const q = params.toString();
      history.replaceState(null, "", location.pathname + (q ? `?${q}` : ""));
      this.params = new URLSearchParams(q);
    },
  };
  const root = h("div", { class: `page page-${found[2]}` });
  main.append(root);

  async function guard(fn) {
    if (current !== state) return;
    try {
      await fn();
    } catch (error) {
      if (current !== state || error.name === "AbortError") return;
      if (error instanceof AuthNeeded) {
        const refused = Boolean(token());
        if (refused) setToken(null); // a refused token is dropped, so nothing runs on with it
        renderSession();
        showSignIn(refused ? error : null);
      } else root.prepend(notice(error.message || String(error), "error"));
    }
  }

  await guard(async () => {
    state.cleanup = await page.render(root, ctx);
    if (current === state) document.body.dataset.ready = path; // what tests and the bench wait for
  });
}

document.addEventListener("click", (event) => {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const a = event.target.closest("a[href]");
  if (!a || a.target || a.origin !== location.origin || !a.pathname.startsWith("/ui/")) return;
  event.preventDefault();
  if (a.pathname + a.search !== location.pathname + location.search) navigate(a.pathname + a.search);
});
window.addEventListener("popstate", route);
renderSession();
route();

// The console's only way to data: the collector's public /api/* (the CLI's endpoints), with the
// query token the user signed in with sent as `Authorization: Bearer` — never in a URL, never logged.
// The token lives in sessionStorage (this tab only), or in memory where storage is unavailable.

const KEY = "reach-otel.query-token";
let memoryToken = null;

export class AuthNeeded extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export function token() {
  try {
    return sessionStorage.getItem(KEY) || memoryToken;
  } catch {
    return memoryToken;
  }
}

export function setToken(value) {
  memoryToken = value || null;
  try {
    if (value) sessionStorage.setItem(KEY, value);
    else sessionStorage.removeItem(KEY);
  } catch {
    // storage blocked: the token stays in memory for this page
  }
}

export function query(params) {
  const q = new URLSearchParams();
  for (const [key, value] of Object.entries(params || {})) {
    if (value === undefined || value === null || value === "") continue;
    q.append(key, String(value));
  }
  const text = q.toString();
  return text ? `?${text}` : "";
}

async function call(method, path, { params, signal } = {}) {
  const headers = { Accept: "application/json" };
  const t = token();
  if (t) headers.Authorization = `Bearer ${t}`;
  const response = await fetch(path + query(params), {
    method,
    headers,
    signal,
    credentials: "omit",
    cache: "no-store",
    redirect: "error",
  });
  if (response.status === 401 || response.status === 403) {
    throw new AuthNeeded(
      response.status,
      response.status === 401
        ? t
          ? "The collector refused this token."
          : "This collector needs its query token."
        : "This token may not read the query API (is it the ingest token?).",
    );
  }
  let body = null;
  const text = await response.text();
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!response.ok) {
    const detail = body && typeof body.detail === "string" ? body.detail : `HTTP ${response.status}`;
    throw new ApiError(response.status, detail);
  }
  return body;
}

/** GET /api/... → JSON. Throws AuthNeeded (401/403) or ApiError. */
export function get(path, params, signal) {
  return call("GET", path, { params, signal });
}

/** POST with an empty body (the ack endpoint takes one). */
export function post(path, signal) {
  return call("POST", path, { signal });
}

// Numbers, durations and times as short text.

export function duration(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return "–";
  const v = Math.round(Number(ms) * 1000) / 1000; // to the microsecond: ns offsets arrive as floats
  if (v >= 60_000) return `${Math.floor(v / 60_000)}m ${Math.round((v % 60_000) / 1000)}s`;
  if (v >= 1000) return `${(v / 1000).toFixed(v >= 10_000 ? 1 : 2)} s`;
  if (v >= 10) return `${v.toFixed(0)} ms`;
  if (v >= 1) return `${v.toFixed(1)} ms`;
  if (v > 0) return `${(v * 1000).toFixed(0)} µs`;
  return "0 ms";
}

export function int(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return "–";
  return Math.round(Number(n)).toLocaleString("en-US");
}

/** 1234 → "1.2k", 3400000 → "3.4M". */
export function compact(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return "–";
  const v = Number(n);
  if (Math.abs(v) >= 1e6) return `${(v / 1e6).toFixed(1)}M`;
  if (Math.abs(v) >= 1e4) return `${Math.round(v / 1e3)}k`;
  if (Math.abs(v) >= 1e3) return `${(v / 1e3).toFixed(1)}k`;
  return String(Math.round(v));
}

export function num(n, digits = 1) {
  if (n === null || n === undefined || Number.isNaN(n)) return "–";
  return Number(n).toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

export function pct(ratio, digits = 0) {
  if (ratio === null || ratio === undefined || Number.isNaN(ratio)) return "–";
  return `${(Number(ratio) * 100).toFixed(digits)}%`;
}

export function usd(v) {
  if (v === null || v === undefined) return "–";
  const n = Number(v);
  return n < 0.01 && n > 0 ? `$${n.toFixed(5)}` : `$${n.toFixed(2)}`;
}

/** ISO or unix-ns → "2026-02-01 12:03:04" in UTC (the API's times are UTC). */
export function time(value) {
  const d = toDate(value);
  if (!d) return "–";
  return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

export function toDate(value) {
  if (value === null || value === undefined || value === "") return null;
  const d = typeof value === "number" ? new Date(value / 1e6) : new Date(String(value));
  return Number.isNaN(d.getTime()) ? null : d;
}

/** "3 min ago" / "in 2 h" relative to now. */
export function ago(value, now = Date.now()) {
  const d = toDate(value);
  if (!d) return "";
  const s = Math.round((now - d.getTime()) / 1000);
  const a = Math.abs(s);
  const text =
    a < 60 ? `${a} s` : a < 3600 ? `${Math.round(a / 60)} min` : a < 86400 ? `${Math.round(a / 3600)} h` : `${Math.round(a / 86400)} d`;
  return s >= 0 ? `${text} ago` : `in ${text}`;
}

"""What ``reach-otel demo`` prints once its traffic is sent: the same renderers as the query
commands (``reach-otel trace``, ``metrics``, ``alerts``, ``topology``), so the report reads at
80 columns, piped or not, with whole names and times; the alerts one line each, an alert that
resolved and fired again folded into one line that says how often."""

from __future__ import annotations

from collections import Counter
from datetime import timezone
from typing import Any, Protocol

from rich.console import Console
from rich.table import Table
from rich.text import Text

from reach_collector.cli.alerts import SINCE
from reach_collector.cli.formats import when
from reach_collector.cli.metrics import print_agents, print_golden
from reach_collector.cli.render import print_tree
from reach_collector.cli.topology import print_topology
from reach_collector.demo.pager import Pager
from reach_otel import semconv as sc

__all__ = [
    "fold_alerts",
    "requests_in_words",
    "show_alerts",
    "show_loop",
    "show_metrics",
    "show_topology",
    "show_trace",
]

UTC = timezone.utc
# The demo's request kinds, in words (traffic.NORMAL / INCIDENT).
_KINDS = {
    "invoice": ("invoice question", "invoice questions"),
    "refund": ("refund request", "refund requests"),
    "outage": ("outage report", "outage reports"),
    "chitchat": ("chit-chat", "chit-chats"),
    "pingpong": ("ping-pong request", "ping-pong requests"),
    "bad_invoice": ("unknown invoice", "unknown invoices"),
}


class Source(Protocol):
    def get(self, path: str, **params: Any) -> Any: ...


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def requests_in_words(outcomes: Counter[str]) -> str:
    """``496 requests: 283 answered, 213 failed. 276 refund requests, 63 invoice questions, …``"""
    total = outcomes["ok"] + outcomes["error"]
    kinds = sorted(((outcomes[k], k) for k in _KINDS if outcomes[k]), reverse=True)
    mix = ", ".join(_count(n, *_KINDS[k]) for n, k in kinds)
    return (
        f"{_count(total, 'request', 'requests')}: {outcomes['ok']} answered, {outcomes['error']} failed."
        + (f" {mix[0].upper()}{mix[1:]}." if mix else "")
    )


def show_trace(collector: Source, out: Console) -> str | None:
    """One request as a tree: the fullest that handed off at most three times (a loop's chain of
    hops is told by the metrics below; its tree would not fit the width)."""
    traces = collector.get("/api/traces", limit=200)["traces"]
    if not traces:
        out.print("[red]no traces reached the collector")
        return None
    readable = [t for t in traces if 1 <= (t.get("hops") or 0) <= 3] or traces
    chosen = max(readable, key=lambda t: (t.get("span_count") or 0, t.get("hops") or 0))
    out.rule("one request, as a trace")
    print_tree(collector.get(f"/api/traces/{chosen['trace_id']}"), out, UTC)
    return str(chosen["trace_id"])


def show_loop(collector: Source, out: Console) -> None:
    """The request that handed off most, told hop by hop on a few lines (its tree would be as deep
    as its hops): the chain of agents, where the loop was detected, where the hop limit struck."""
    traces = collector.get("/api/traces", limit=200)["traces"]
    if not traces or not (deepest := max(traces, key=lambda t: t.get("hops") or 0)).get("hops"):
        return
    spans = collector.get(f"/api/traces/{deepest['trace_id']}")["spans"]
    hop = sc.REACH_HOP_COUNT
    handoffs = sorted(
        (s for s in spans if s["name"].startswith("handoff") and s["attributes"].get(hop) is not None),
        key=lambda s: s["attributes"][hop],
    )
    if not handoffs:
        return
    out.rule(f"the longest request, hop by hop ({len(handoffs)} hops)")
    chain = [handoffs[0]["attributes"].get(sc.REACH_HANDOFF_SOURCE, "?")]
    chain += [h["attributes"].get(sc.REACH_HANDOFF_TARGET, "?") for h in handoffs]
    out.print(" → ".join(map(str, chain)), markup=False, highlight=False)
    marks = (("loop detected", sc.EVENT_LOOP_DETECTED), ("hop limit exceeded", sc.EVENT_HOP_LIMIT_EXCEEDED))
    found = []
    for what, event in marks:
        hops = [h["attributes"][hop] for h in handoffs if any(e["name"] == event for e in h["events"])]
        if hops:
            found.append(f"{what} at hop {hops[0]}")
    if found:
        out.print(f"{'; '.join(found)} (trace {deepest['trace_id']})", markup=False, highlight=False)


def show_metrics(collector: Source, out: Console) -> None:
    out.rule("golden and multi-agent metrics")
    print_golden(collector.get("/api/metrics/golden", window="5m", by="agent"), UTC)
    out.print()
    print_agents(collector.get("/api/metrics/agents", window="5m"), UTC)


def fold_alerts(alerts: list[dict[str, Any]]) -> list[tuple[dict[str, Any], int]]:
    """One entry per alert (its fingerprint): its latest episode, and how many episodes it had."""
    latest: dict[str, dict[str, Any]] = {}
    episodes: Counter[str] = Counter()
    for a in alerts:
        key = a["fingerprint"]
        episodes[key] += 1
        if key not in latest or (a.get("active_at") or "") > (latest[key].get("active_at") or ""):
            latest[key] = a
    ordered = sorted(latest.values(), key=lambda a: (a["severity"], a["alertname"], str(a["labels"])))
    return [(a, episodes[a["fingerprint"]]) for a in ordered]


def show_alerts(collector: Source, out: Console, pager: Pager) -> None:
    folded = fold_alerts(collector.get("/api/alerts")["alerts"])
    out.rule("alerts")
    if not folded:
        out.print("no alerts fired")
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column()  # wraps under itself, so each alert stays one entry
    for a, n in folded:
        since = a.get(SINCE.get(a["state"], "active_at")) or a.get("active_at")
        again = f" (fired {n} times: it resolved and fired again)" if n > 1 else ""
        summary = a.get("annotations", {}).get("summary", "")
        grid.add_row(
            a["severity"], Text(f"{a['alertname']} {a['state']} since {when(since, UTC)}{again}: {summary}")
        )
    out.print(grid)
    out.rule("who was paged")
    pages: Counter[tuple[str, str]] = Counter()
    for page in pager.pages:
        if page.recipient == "registry/deregister":
            continue
        for alert in page.body.get("alerts", []):
            labels = alert.get("labels", {})
            if alert.get("status") == "firing":
                severity, name = labels.get("severity", "?"), labels.get("alertname", "?")
                what = f"{severity} {name} ({labels.get('agent', '-')})"
                pages[(page.recipient, what)] += 1
    for (recipient, what), n in sorted(pages.items()):
        times = "" if n == 1 else f", {n} pages"
        out.print(f"{recipient}: {what}{times}", markup=False, highlight=False)
    if not pages:
        out.print("nobody was paged")
    gone = sorted({str(p.body.get("agent_id")) for p in pager.pages if p.recipient == "registry/deregister"})
    if gone:
        out.print(f"deregistered from the routing table (no page): {', '.join(gone)}")


def show_topology(collector: Source, out: Console) -> None:
    """The agents and the handoffs between them, as ``reach-otel topology`` prints them."""
    out.rule("agent topology")
    print_topology(collector.get("/api/topology", window="5m"), UTC)

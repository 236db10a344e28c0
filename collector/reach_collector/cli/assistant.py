"""The assistant's view of a collector: an MCP server (``reach-otel mcp``) whose tools are thin
clients of a running collector's HTTP API (search_traces, get_trace, why, golden_metrics,
agent_metrics, topology, alerts, who_is_on_call), so an AI assistant can debug a multi-agent app.
Every tool goes through the query commands' HTTP client (never the store); a failed query comes back
as a tool error whose text says what went wrong. ``get_trace`` answers with a compact, indented span
tree, one line per span and per marked event, rather than the raw JSON. Every string an answer
carries came from someone's spans, so its control characters are escaped
(reach_collector.text.printable): a span name holding a newline cannot add a line of its own to the
tree an assistant reads."""

from __future__ import annotations

import re
from functools import partial
from typing import Any, Final

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from reach_collector.cli.client import QueryError, default_url, get_json
from reach_collector.text.printable import escape_all, escape_controls

__all__ = ["MAX_TREE_LINES", "build_server", "compact_tree"]

MAX_TREE_LINES: Final = 500
_TRACE_ID: Final = re.compile(r"^[0-9a-fA-F]{32}$")


def compact_tree(trace: dict[str, Any], max_lines: int = MAX_TREE_LINES) -> str:
    """The trace as text an LLM reads well: a heading, then one line per span indented two spaces a
    level (name, agent, duration, status or error type, tokens, handoff source → target with its
    outcome and hop, loop flag), and under it, one level deeper, the events the CLI tree marks (loop
    detected, hop limit exceeded, gate, exception) and its evaluations; past ``max_lines`` spans, a
    note of how many were left out. Each line has its control characters escaped, so a span, an
    event or an evaluation is exactly one line."""
    from reach_collector.cli.render import evaluation_line, event_line, span_label

    agents = sorted({escape_controls(s) for s in _agents(trace) if s})
    lines = [escape_controls(f"trace {trace['trace_id']}: {trace.get('span_count', '?')} spans")]
    if agents:
        lines.append("agents: " + ", ".join(agents))
    shown = left_out = 0
    pending: list[tuple[int, dict[str, Any]]] = [(0, root) for root in reversed(trace.get("roots") or [])]
    while pending:  # iterative, so a deep trace cannot hit the recursion limit
        depth, span = pending.pop()
        if shown >= max_lines:
            left_out += 1
        else:
            lines.append("  " * depth + escape_controls(span_label(span).plain))
            shown += 1
            for event in span.get("events") or []:  # what the CLI tree marks under the span
                marked = event_line(event)
                if marked is not None:
                    lines.append("  " * (depth + 1) + escape_controls(marked.plain))
            for evaluation in span.get("evaluations") or []:
                lines.append("  " * (depth + 1) + escape_controls(evaluation_line(evaluation).plain))
        for child in reversed(span.get("children") or []):
            pending.append((depth + 1, child))
    if left_out:
        lines.append(f"… {left_out} more span(s) left out (shown the first {max_lines})")
    return "\n".join(lines)


def _agents(trace: dict[str, Any]) -> list[str]:
    from reach_otel import semconv as sc

    found: list[object] = []
    pending = list(trace.get("roots") or [])
    while pending:
        span = pending.pop()
        attrs = span.get("attributes") or {}
        found.append(attrs.get(sc.GEN_AI_AGENT_NAME) or attrs.get(sc.REACH_AGENT_NAME) or span.get("agent"))
        handoff = span.get("handoff") or {}
        found += [handoff.get("source"), handoff.get("target")]
        pending += span.get("children") or []
    return [a for a in found if isinstance(a, str)]


def _trace_id(given: str) -> str:
    """A trace id as the API takes it, or the tool error that says what is wrong with it."""
    if not _TRACE_ID.match(given.strip()) or int(given.strip(), 16) == 0:
        raise ToolError(f"malformed trace id {given!r}: expected 32 hex digits (from search_traces)")
    return given.strip().lower()


def build_server(url: str | None = None, token: str | None = None) -> MCPServer:
    """The MCP server over the collector at ``url`` (default ``$REACH_OTEL_URL`` or the local one),
    sending ``token`` (default ``$REACH_QUERY_TOKEN``) as the query token."""
    base = url or default_url()
    server = MCPServer(
        "reach-otel",
        instructions="Query a reach-otel collector: traces of multi-agent LLM apps (agents, handoffs, "
        "tools, tokens), why they failed, their golden metrics, the agent topology, alerts and who is "
        "on call.",
    )

    async def query(path: str, params: list[tuple[str, str]] | None = None) -> Any:
        try:
            body = await anyio.to_thread.run_sync(partial(get_json, base, path, params, token=token))
        except QueryError as exc:
            raise ToolError(escape_controls(str(exc))) from None
        return escape_all(body)

    @server.tool()
    async def search_traces(
        service: str | None = None,
        agent: str | None = None,
        errors: bool = False,
        since: str | None = None,
        until: str | None = None,
        min_duration_ms: float | None = None,
        limit: int = 20,
    ) -> dict[str, Any]:
        """Search traces, newest first. Returns {"traces": [...]}, each with trace_id, root span name,
        service, start time, duration_ms, span_count, error_count and the agents that ran. Filters:
        service (service.name), agent (an agent that ran), errors (only traces with an ERROR span),
        since (ISO-8601, unix ns or a lookback like 15m), until, min_duration_ms, limit (max 1000)."""
        params: list[tuple[str, str]] = [("limit", str(limit))]
        for name, value in (("service", service), ("agent", agent), ("since", since), ("until", until)):
            if value:
                params.append((name, value))
        if errors:
            params.append(("status", "error"))
        if min_duration_ms is not None:
            params.append(("min_duration_ms", str(min_duration_ms)))
        body: dict[str, Any] = await query("/api/traces", params)
        return body

    @server.tool()
    async def get_trace(trace_id: str) -> str:
        """One trace as a compact span tree: one line per span, indented by depth, with the span name,
        [agent], duration, OK or ERROR and its error type, tokens in→out, handoffs as
        "⇢ handoff source → target (outcome) hop N", and "⟳ LOOP" where a handoff loop was detected.
        Long traces are cut at 500 lines with a note of how many spans were left out."""
        trace = await query(f"/api/traces/{_trace_id(trace_id)}")
        return compact_tree(trace)

    @server.tool()
    async def why(
        trace_id: str | None = None, window: str = "15m", agent: str | None = None, service: str | None = None
    ) -> dict[str, Any]:
        """Why requests failed. With ``trace_id``: that trace's cause — the origin span where its
        failure began (kind such as tool_error, llm_error, handoff_rejected, loop; agent; name; error
        type and message), the path from the root down to it, the agents it affected and the tokens,
        cost and time wasted. Without: the failed traces of the last ``window`` grouped by cause, most
        traces first, each with its share, upstream callers, affected agents, waste and example trace
        ids; ``agent`` keeps traces whose failure passed through that agent, ``service`` one service."""
        if trace_id is not None:
            cause: dict[str, Any] = await query(f"/api/traces/{_trace_id(trace_id)}/cause")
            return cause
        params = [("window", window)]
        params += [(name, value) for name, value in (("agent", agent), ("service", service)) if value]
        causes: dict[str, Any] = await query("/api/causes", params)
        return causes

    @server.tool()
    async def golden_metrics(window: str = "1h", by: str | None = None) -> dict[str, Any]:
        """Golden signals over the last ``window`` (e.g. 15m, 1h, 1d): {"groups": [...]}, each with its
        key, calls, ok, errors, success_rate, throughput_per_min and p50/p95/p99 latency in ms, grouped
        ``by`` agent (the default) or another grouping the collector supports (e.g. model, tool)."""
        params = [("window", window)] + ([("by", by)] if by else [])
        body: dict[str, Any] = await query("/api/metrics/golden", params)
        return body

    @server.tool()
    async def agent_metrics(window: str = "1h") -> dict[str, Any]:
        """Per-agent metrics over the last ``window`` (e.g. 15m, 1h): the handoff, hop and loop figures
        and the tokens and cost of each agent, as the console's Agents page shows them."""
        body: dict[str, Any] = await query("/api/metrics/agents", [("window", window)])
        return body

    @server.tool()
    async def topology(window: str = "1h") -> dict[str, Any]:
        """The agent graph over the last ``window`` (e.g. 1h): nodes (agents, with calls, errors,
        tokens and cost) and edges (the handoffs between them, with counts and outcomes)."""
        body: dict[str, Any] = await query("/api/topology", [("window", window)])
        return body

    @server.tool()
    async def alerts(state: str | None = None) -> dict[str, Any]:
        """Alerts: {"alerts": [...]}, each with its rule, state (pending, firing or resolved), labels,
        value, when it became active and its fingerprint. ``state`` keeps only that state."""
        body: dict[str, Any] = await query("/api/alerts", [("state", state)] if state else None)
        return body

    @server.tool()
    async def who_is_on_call(at: str | None = None) -> dict[str, Any]:
        """Who is on call in each schedule now (or ``at`` an ISO-8601 time): the person, why (a layer
        or an override), who is next and when the hand-off is, plus the collector's time zone."""
        body: dict[str, Any] = await query("/api/oncall", [("at", at)] if at else None)
        return body

    return server

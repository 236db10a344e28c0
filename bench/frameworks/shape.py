"""What one request's spans show, read the same way for every tracer (each marks kinds its own way).

A span is an LLM call, an agent, a tool or a handoff by its tracer's own marking: ours by
``gen_ai.operation.name``, OpenInference's by ``openinference.span.kind``, OpenLLMetry's by
``traceloop.span.kind`` / ``llm.request.type``. An LLM span is "under an agent span" when an ancestor is
marked as an agent, and "under its named agent" when that nearest agent ancestor also names one of
the app's agents (in its span name or an agent-name attribute), the same one as the nearest
ancestor named after an agent at all (the node or task that made the call).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from reach_otel import semconv as sc

_AGENT_NAME_KEYS = (sc.GEN_AI_AGENT_NAME, sc.OPENINFERENCE_AGENT_NAME, "crewai.agent.role", "agent.role")


def _attrs(span: dict[str, Any]) -> dict[str, Any]:
    attributes: dict[str, Any] = span["attributes"]
    return attributes


def is_llm(span: dict[str, Any]) -> bool:
    a = _attrs(span)
    return (
        a.get(sc.GEN_AI_OPERATION_NAME) in sc.LLM_OPERATIONS
        or a.get(sc.OPENINFERENCE_SPAN_KIND) == "LLM"
        or a.get(sc.TRACELOOP_REQUEST_TYPE) in ("chat", "completion")
    )


def is_agent(span: dict[str, Any]) -> bool:
    a = _attrs(span)
    return (
        a.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_AGENT
        or a.get(sc.OPENINFERENCE_SPAN_KIND) == "AGENT"
        or a.get(sc.TRACELOOP_SPAN_KIND) == "agent"
    )


def is_tool(span: dict[str, Any]) -> bool:
    a = _attrs(span)
    return (
        a.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_TOOL
        or a.get(sc.OPENINFERENCE_SPAN_KIND) == "TOOL"
        or a.get(sc.TRACELOOP_SPAN_KIND) == "tool"
    )


def is_handoff(span: dict[str, Any]) -> bool:
    """A span that is a handoff as such (not a tool call that happens to transfer control)."""
    a = _attrs(span)
    return a.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_HANDOFF or sc.REACH_HANDOFF_TARGET in a


def mentions(span: dict[str, Any], agents: Iterable[str]) -> str | None:
    """The first of ``agents`` the span is named after (name or agent-name attributes)."""
    texts = [span["name"].lower()] + [str(_attrs(span).get(k, "")).lower() for k in _AGENT_NAME_KEYS]
    for agent in agents:
        if any(agent.lower() in text for text in texts):
            return agent
    return None


def summarise(
    spans: list[dict[str, Any]],
    agents: list[str],
    requests: int = 1,
    callers: list[str] | None = None,
    marker: str | None = None,
) -> dict[str, Any]:
    """The shape of ``requests`` requests' spans, per request where it is a count. ``callers``, when
    the app knows it, is the agent that made each LLM call, in order: the ground truth then."""
    by_id = {span["span_id"]: span for span in spans}

    def ancestors(span: dict[str, Any]) -> Iterable[dict[str, Any]]:
        seen = 0
        parent = by_id.get(span["parent_id"] or "")
        while parent is not None and seen < 256:
            yield parent
            parent = by_id.get(parent["parent_id"] or "")
            seen += 1

    llm = sorted((s for s in spans if is_llm(s)), key=lambda s: s["start"] or 0)
    if callers is not None and len(callers) != len(llm):
        callers = None  # a tracer that makes more or fewer LLM spans than calls: fall back
    under = named_right = 0
    for i, span in enumerate(llm):
        nearest_agent = next((p for p in ancestors(span) if is_agent(p)), None)
        if nearest_agent is None:
            continue
        under += 1
        named = (
            callers[i]
            if callers is not None
            else next((m for p in ancestors(span) if (m := mentions(p, agents))), None)
        )
        if (agent := mentions(nearest_agent, agents)) and agent == named:
            named_right += 1
    handoffs = [s for s in spans if is_handoff(s)]
    hops = sorted(
        int(_attrs(s)[sc.REACH_HOP_COUNT])
        for s in handoffs
        if isinstance(_attrs(s).get(sc.REACH_HOP_COUNT), int)
    )
    roots = [s for s in spans if s["parent_id"] is None or s["parent_id"] not in by_id]
    return {
        "spans": len(spans) / requests,
        "traces": len({s["trace_id"] for s in spans}) / requests,
        "roots": len(roots) / requests,
        "agents": sum(map(is_agent, spans)) / requests,
        "llm": len(llm) / requests,
        "llm_under_agent_span": under / requests,
        "llm_under_named_agent": named_right / requests,
        "tools": sum(map(is_tool, spans)) / requests,
        "handoffs": len(handoffs) / requests,
        "goto_spans": sum(1 for s in spans if "langgraph.command.goto_node" in _attrs(s)) / requests,
        "transfer_tool_spans": sum(1 for s in spans if is_tool(s) and _transfer_tool(s)) / requests,
        "hop_counts": hops,
        "loop_detected": any(
            sc.EVENT_LOOP_DETECTED in s["events"] or _attrs(s).get(sc.REACH_LOOP_DETECTED) for s in spans
        ),
        "content_spans": sum(1 for s in spans if marker and _holds(s, marker)) / requests,
        "names": Counter(s["name"] for s in spans).most_common(12),
    }


def _transfer_tool(span: dict[str, Any]) -> bool:
    text = (span["name"] + " " + str(_attrs(span).get(sc.GEN_AI_TOOL_NAME, ""))).lower()
    text += " " + str(_attrs(span).get(sc.OPENINFERENCE_TOOL_NAME, "")).lower()
    return any(word in text for word in ("transfer_", "delegate", "coworker", "handoff"))


def _holds(span: dict[str, Any], marker: str) -> bool:
    """Whether any attribute value holds ``marker`` (a word of the user's prompt): content recorded."""
    return any(marker in str(value) for value in _attrs(span).values())

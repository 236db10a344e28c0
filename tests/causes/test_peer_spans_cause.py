"""A trace's cause from other instrumentations' spans (SPEC §13, §17): OpenInference's and
OpenLLMetry's agent, tool and LLM spans, normalised at ingest, give the same origin, agent and
kind as ours would — the failing tool under the agent that ran it, not the agent with the most
ERROR spans."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cause_helpers import App, Collector

from reach_otel import semconv as sc

OI = sc.OPENINFERENCE_SPAN_KIND


def _cause(collector: Collector, trace_id: str) -> dict[str, Any]:
    r = collector.get(f"/api/traces/{trace_id}/cause")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_openinference_spans_name_the_failing_tool(
    module_collector: Collector, apps: Callable[..., App]
) -> None:
    app = apps(module_collector.url)
    root = app.span(None, "Agent workflow", 0, 1000, {OI: "AGENT"}, "RuntimeError", "failed", ())
    billing = root.child(
        "Billing Agent",
        10,
        900,
        {OI: "AGENT", sc.OPENINFERENCE_AGENT_NAME: "Billing Agent"},
        error="RuntimeError",
    )
    # a tool that failed and was retried successfully: absorbed, not the origin
    billing.child("lookup_invoice", 20, 30, {OI: "TOOL", sc.OPENINFERENCE_TOOL_NAME: "lookup_invoice"},
                  error="ConnectionError")  # fmt: skip
    billing.child("lookup_invoice", 60, 30, {OI: "TOOL", sc.OPENINFERENCE_TOOL_NAME: "lookup_invoice"})
    failed = billing.child(
        "refund", 100, 40, {OI: "TOOL", sc.OPENINFERENCE_TOOL_NAME: "refund"}, error="TimeoutError",
        message="refund backend timed out",
    )  # fmt: skip
    app.flush()
    got = _cause(module_collector, root.trace_id)
    assert got["failed"] is True
    origin = got["origin"]
    assert (origin["span_id"], origin["kind"], origin["name"], origin["agent"], origin["error_type"]) == (
        failed.span_id,
        "tool_error",
        "refund",
        "Billing Agent",
        "TimeoutError",
    )
    assert got["path"] == [root.span_id, billing.span_id, failed.span_id]


def test_openllmetry_spans_name_the_failing_model(
    module_collector: Collector, apps: Callable[..., App]
) -> None:
    app = apps(module_collector.url)
    workflow = {sc.TRACELOOP_SPAN_KIND: "workflow", sc.TRACELOOP_ENTITY_NAME: "support"}
    root = app.span(None, "support.workflow", 0, 1000, workflow, "RateLimitError", "failed", ())
    agent = {sc.TRACELOOP_SPAN_KIND: "agent", sc.TRACELOOP_ENTITY_NAME: "researcher"}
    researcher = root.child("researcher.agent", 10, 900, agent, error="RateLimitError")
    chat = {
        sc.TRACELOOP_REQUEST_TYPE: "chat",
        sc.GEN_AI_SYSTEM: "openai",
        sc.GEN_AI_REQUEST_MODEL: "gpt-4o-mini",
        sc.GEN_AI_USAGE_PROMPT_TOKENS: 30,
    }
    failed = researcher.child("openai.chat", 20, 50, chat, error="RateLimitError", message="429")
    app.flush()
    origin = _cause(module_collector, root.trace_id)["origin"]
    assert (origin["span_id"], origin["kind"], origin["name"], origin["agent"]) == (
        failed.span_id,
        "llm_error",
        "gpt-4o-mini",
        "researcher",
    )

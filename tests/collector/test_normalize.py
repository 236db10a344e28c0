"""Other instrumentations' spans land on the same promoted columns as ours (§4)."""

from __future__ import annotations

from typing import Any

import pytest
from collector_helpers import RunningCollector, tracer_provider
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from reach_collector.ingest.normalize import TRACELOOP_REQUEST_TYPE, Promoted, promote
from reach_otel import semconv as sc


def _p(
    attrs: dict[str, Any], status: int = 0, events: tuple[str, ...] = (), exc: str | None = None
) -> Promoted:
    return promote(attrs, status, events, exc)


def test_our_own_spans() -> None:
    p = _p(
        {
            sc.GEN_AI_OPERATION_NAME: sc.OP_HANDOFF,
            sc.GEN_AI_AGENT_NAME: "Triage",
            sc.REACH_HANDOFF_SOURCE: "Triage",
            sc.REACH_HANDOFF_TARGET: "Billing",
            sc.REACH_HANDOFF_STATUS: "committed",
            sc.REACH_HANDOFF_MODE: "delegate",
            sc.REACH_HOP_COUNT: 2,
            sc.REACH_LOOP_DETECTED: True,
        }
    )
    assert (p.operation, p.agent, p.handoff_source, p.handoff_target) == (
        "handoff",
        "Triage",
        "Triage",
        "Billing",
    )
    assert (p.handoff_status, p.handoff_mode, p.hop_count, p.loop_detected) == (
        "committed",
        "delegate",
        2,
        True,
    )
    llm = _p({sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT, sc.GEN_AI_REQUEST_MODEL: "m", sc.REACH_AGENT_NAME: "A"})
    assert (llm.operation, llm.model, llm.agent, llm.handoff_target) == ("chat", "m", "A", None)


def test_openllmetry() -> None:
    agent = _p({sc.TRACELOOP_SPAN_KIND: "agent", sc.TRACELOOP_ENTITY_NAME: "Researcher"})
    assert (agent.operation, agent.agent) == ("invoke_agent", "Researcher")
    tool = _p({sc.TRACELOOP_SPAN_KIND: "tool", sc.TRACELOOP_ENTITY_NAME: "search"})
    assert (tool.operation, tool.tool) == ("execute_tool", "search")
    llm = _p(
        {
            sc.GEN_AI_SYSTEM: "openai",
            TRACELOOP_REQUEST_TYPE: "chat",
            sc.GEN_AI_REQUEST_MODEL: "gpt-4o-mini",
            sc.GEN_AI_USAGE_PROMPT_TOKENS: 11,
            sc.GEN_AI_USAGE_COMPLETION_TOKENS: 7,
        }
    )
    assert (llm.operation, llm.provider, llm.model, llm.input_tokens, llm.output_tokens) == (
        "chat",
        "openai",
        "gpt-4o-mini",
        11,
        7,
    )
    workflow = _p({sc.TRACELOOP_SPAN_KIND: "workflow", sc.TRACELOOP_ENTITY_NAME: "turn"})
    assert workflow.operation == "invoke_workflow"


def test_openinference() -> None:
    llm = _p(
        {
            sc.OPENINFERENCE_SPAN_KIND: "LLM",
            sc.OPENINFERENCE_LLM_MODEL_NAME: "oi-model",
            sc.OPENINFERENCE_LLM_PROVIDER: "anthropic",
            sc.OPENINFERENCE_TOKEN_PROMPT: 5,
            sc.OPENINFERENCE_TOKEN_COMPLETION: 3,
            sc.OPENINFERENCE_SESSION_ID: "S1",
        }
    )
    assert (llm.operation, llm.model, llm.provider, llm.input_tokens, llm.output_tokens) == (
        "chat",
        "oi-model",
        "anthropic",
        5,
        3,
    )
    assert llm.conversation_id == "S1"
    agent = _p({sc.OPENINFERENCE_SPAN_KIND: "AGENT", sc.OPENINFERENCE_AGENT_NAME: "Planner"})
    assert (agent.operation, agent.agent) == ("invoke_agent", "Planner")
    tool = _p({sc.OPENINFERENCE_SPAN_KIND: "TOOL", sc.OPENINFERENCE_TOOL_NAME: "calc"})
    assert (tool.operation, tool.tool) == ("execute_tool", "calc")


def test_openai_agents_handoff_mapping() -> None:
    p = _p({sc.GEN_AI_HANDOFF_FROM_AGENT: "Triage", sc.GEN_AI_HANDOFF_TO_AGENT: "Refunds"})
    assert (p.operation, p.handoff_source, p.handoff_target) == ("handoff", "Triage", "Refunds")
    q = _p(
        {
            sc.GEN_AI_OPERATION_NAME: sc.OP_HANDOFF,
            sc.GEN_AI_AGENT_NAME: "A",
            sc.GEN_AI_TRANSFER_TARGET_NAME: "B",
        }
    )
    assert (q.handoff_source, q.handoff_target) == ("A", "B")


def test_errors_and_odd_values() -> None:
    assert _p({}, status=2, exc="KeyError").error_type == "KeyError"
    assert _p({sc.ERROR_TYPE: "rate_limited"}, status=2, exc="KeyError").error_type == "rate_limited"
    assert _p({}, status=0, exc="KeyError").error_type is None
    assert _p({}, events=(sc.EVENT_LOOP_DETECTED,)).loop_detected is True
    odd = _p({sc.GEN_AI_USAGE_INPUT_TOKENS: True, sc.REACH_HOP_COUNT: 2**40, sc.GEN_AI_AGENT_NAME: 5})
    assert (odd.input_tokens, odd.hop_count, odd.agent) == (None, None, None)
    assert _p({sc.GEN_AI_USAGE_OUTPUT_TOKENS: 12.0}).output_tokens == 12


@pytest.mark.parametrize(
    "attrs,expected",
    [
        (
            {sc.OPENINFERENCE_SPAN_KIND: "AGENT", sc.OPENINFERENCE_AGENT_NAME: "Planner"},
            ("invoke_agent", "Planner", None, None),
        ),
        (
            {sc.GEN_AI_SYSTEM: "openai", sc.GEN_AI_REQUEST_MODEL: "m", sc.GEN_AI_USAGE_PROMPT_TOKENS: 3},
            ("chat", None, "m", 3),
        ),
    ],
)
def test_promoted_at_ingest(
    collector: RunningCollector, attrs: dict[str, Any], expected: tuple[Any, ...]
) -> None:
    provider, _ = tracer_provider(OTLPSpanExporter(endpoint=collector.url + "/v1/traces"))
    with provider.get_tracer("other-tool").start_as_current_span("foreign", attributes=attrs):
        pass
    provider.shutdown()
    rows = collector.store.query("SELECT operation, agent, model, input_tokens FROM spans")
    assert rows == [expected]

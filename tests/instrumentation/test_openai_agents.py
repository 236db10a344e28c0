"""OpenAI Agents SDK integration: real ``agents.Agent`` runs against the local fake LLM server."""

from __future__ import annotations

import asyncio
import json
import sys
import types
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import agents
import openai
import pytest
from agents import Agent, Runner, function_tool
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

import reach_otel
from reach_otel.instrumentation.openai_agents import OpenAIAgentsInstrumentor, processor
from reach_otel.testing._fake_script import chat_items, plan_reply
from reach_otel.testing.fake_llm import FakeLLMServer


class RecordingProcessor(agents.TracingProcessor):
    """The user's own processor: it must keep receiving everything."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def on_trace_start(self, trace: Any) -> None:
        self.events.append("trace_start")

    def on_trace_end(self, trace: Any) -> None:
        self.events.append("trace_end")

    def on_span_start(self, span: Any) -> None:
        self.events.append(f"start:{span.span_data.type}")

    def on_span_end(self, span: Any) -> None:
        self.events.append(f"end:{span.span_data.type}")

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def sdk(llm: FakeLLMServer) -> Iterator[RecordingProcessor]:
    """The SDK on the fake server, its default exporter removed (no network), a user processor added."""
    agents.set_trace_processors([])  # test setup only: product code never replaces processors
    agents.set_tracing_disabled(False)
    agents.set_default_openai_api("chat_completions")
    _base_url.append(llm.openai_base_url)
    user_processor = RecordingProcessor()
    agents.add_trace_processor(user_processor)
    yield user_processor
    agents.set_trace_processors([])
    _base_url.clear()


@pytest.fixture
def instrumented(sdk: RecordingProcessor, rec: Any) -> Iterator[OpenAIAgentsInstrumentor]:
    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument()
    yield instrumentor
    instrumentor.uninstrument()


@function_tool
def lookup_invoice(query: str) -> str:
    """Look up an invoice."""
    return f"invoice {query}: 42 EUR"


@function_tool
def broken_lookup(query: str) -> str:
    """A tool that fails."""
    raise ValueError("ledger offline")


@function_tool(failure_error_function=None)
def fatal_lookup(query: str) -> str:
    """A tool whose failure ends the run."""
    raise KeyError("no such ledger")


_base_url: list[str] = []


@asynccontextmanager
async def fresh_client() -> AsyncIterator[None]:
    """A client per event loop, closed in it: a pooled connection cannot outlive its loop."""
    client = openai.AsyncOpenAI(base_url=_base_url[-1], api_key="test", max_retries=0)
    agents.set_default_openai_client(client, use_for_tracing=False)
    try:
        yield
    finally:
        await client.close()


def run(agent: Agent[Any], text: str) -> Any:
    async def main() -> Any:
        async with fresh_client():
            return (await Runner.run(agent, text)).final_output

    return asyncio.run(main())


def children(rec: Any, parent: ReadableSpan) -> list[str]:
    return [
        s.name
        for s in sorted(rec.spans, key=lambda s: s.start_time)
        if s.parent and s.parent.span_id == parent.context.span_id
    ]


def chat_spans(rec: Any) -> list[ReadableSpan]:
    return sorted((s for s in rec.spans if s.name.startswith("chat ")), key=lambda s: s.start_time)


def expected_usage(llm: FakeLLMServer, last: int) -> list[tuple[int, int]]:
    """(input, output) tokens of the last ``last`` chat requests, as the fake server counted them."""
    replies = [plan_reply(chat_items(r.body)) for r in llm.requests[-last:]]
    return [(r.input_tokens, r.output_tokens) for r in replies]


def test_agent_generation_and_tool_spans_nest_in_one_trace(
    rec: Any, instrumented: Any, llm: FakeLLMServer
) -> None:
    billing = Agent(
        name="Billing", instructions="You handle invoices.", model="gpt-test", tools=[lookup_invoice]
    )
    assert run(billing, "[tool:lookup_invoice] invoice 7") == "echo: invoice invoice 7: 42 EUR"

    workflow = rec.one("invoke_workflow Agent workflow")
    agent = rec.one("invoke_agent Billing")
    tool = rec.one("execute_tool lookup_invoice")
    chats = sorted(rec.named("chat gpt-test"), key=lambda s: s.start_time)
    assert len({s.context.trace_id for s in rec.spans}) == 1
    assert workflow.parent is None and agent.parent.span_id == workflow.context.span_id
    assert children(rec, agent) == [chats[0].name, tool.name, chats[1].name]
    assert tool.attributes["gen_ai.tool.type"] == "function"
    assert tool.attributes["reach.agent.name"] == "Billing"
    assert "gen_ai.tool.call.arguments" not in tool.attributes  # content is not captured by default
    first = dict(chats[0].attributes)
    assert first["gen_ai.provider.name"] == "openai" and first["reach.agent.name"] == "Billing"
    assert first["server.address"] == "127.0.0.1" and first["server.port"] == llm.port
    assert first["reach.llm.tool_calls_requested"] == ("lookup_invoice",)
    assert agent.attributes["reach.agent.llm_calls"] == 2
    assert agent.attributes["reach.agent.tool_calls"] == 1


def test_token_usage_on_llm_spans_and_summed_on_the_agent(
    rec: Any, instrumented: Any, llm: FakeLLMServer
) -> None:
    billing = Agent(name="Billing", instructions="You handle invoices.", tools=[lookup_invoice])
    run(billing, "[tool:lookup_invoice] invoice 7")
    chats = chat_spans(rec)
    usage = [
        (c.attributes["gen_ai.usage.input_tokens"], c.attributes["gen_ai.usage.output_tokens"]) for c in chats
    ]
    assert usage == expected_usage(llm, 2)
    agent = rec.one("invoke_agent Billing")
    assert agent.attributes["gen_ai.usage.input_tokens"] == sum(i for i, _ in usage)
    assert agent.attributes["gen_ai.usage.output_tokens"] == sum(o for _, o in usage)


def test_handoff_between_two_agents(rec: Any, instrumented: Any, llm: FakeLLMServer) -> None:
    billing = Agent(name="Billing", instructions="Billing.", tools=[lookup_invoice])
    triage = Agent(name="Triage", instructions="Route the customer.", handoffs=[billing])
    out = run(triage, "[tool:transfer_to_billing][tool:lookup_invoice] invoice 9")
    assert out == "echo: invoice invoice 9: 42 EUR"

    workflow = rec.one("invoke_workflow Agent workflow")
    triage_span, billing_span = rec.one("invoke_agent Triage"), rec.one("invoke_agent Billing")
    handoff = rec.one("handoff Billing")
    assert len({s.context.trace_id for s in rec.spans}) == 1
    assert handoff.parent.span_id == triage_span.context.span_id
    assert billing_span.parent.span_id == workflow.context.span_id
    assert billing_span.start_time >= handoff.end_time
    attrs = dict(handoff.attributes)
    assert (attrs["reach.handoff.source"], attrs["reach.handoff.target"]) == ("Triage", "Billing")
    assert (attrs["reach.handoff.mode"], attrs["gen_ai.transfer.mode"]) == ("takeover", "pass_control")
    assert attrs["reach.hop.count"] == 1 and attrs["reach.loop.detected"] is False
    assert triage_span.attributes["reach.hop.count"] == 0
    assert billing_span.attributes["reach.hop.count"] == 1
    assert triage_span.attributes["reach.agent.llm_calls"] == 1
    assert billing_span.attributes["reach.agent.llm_calls"] == 2
    assert billing_span.attributes["gen_ai.usage.input_tokens"] == sum(i for i, _ in expected_usage(llm, 2))


def test_content_capture_records_tool_arguments_and_messages(make_recorder: Any, sdk: Any) -> None:
    rec = make_recorder(capture_content=True)
    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument()
    try:
        run(Agent(name="Billing", tools=[lookup_invoice]), "[tool:lookup_invoice] invoice 3")
    finally:
        instrumentor.uninstrument()
    tool = rec.one("execute_tool lookup_invoice")
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"query": "invoice 3"}
    assert json.loads(tool.attributes["gen_ai.tool.call.result"]) == "invoice invoice 3: 42 EUR"
    first_chat = chat_spans(rec)[0]
    (message,) = json.loads(first_chat.attributes["gen_ai.output.messages"])
    assert message["parts"][0]["type"] == "tool_call" and message["parts"][0]["name"] == "lookup_invoice"
    assert "invoice 3" in first_chat.attributes["gen_ai.input.messages"]


def test_a_tool_that_raises_makes_an_error_span(rec: Any, instrumented: Any) -> None:
    run(Agent(name="Billing", tools=[broken_lookup]), "[tool:broken_lookup] invoice 1")
    tool = rec.one("execute_tool broken_lookup")
    assert tool.status.status_code == StatusCode.ERROR
    assert tool.attributes["error.type"]  # the SDK handled it and kept only its message
    assert [e.name for e in tool.events] == ["exception"]
    assert rec.one("invoke_agent Billing").status.status_code != StatusCode.ERROR  # the run went on

    rec.clear()
    with pytest.raises(agents.exceptions.UserError):
        run(Agent(name="Billing", tools=[fatal_lookup]), "[tool:fatal_lookup] invoice 1")
    for name in ("execute_tool fatal_lookup", "invoke_agent Billing", "invoke_workflow Agent workflow"):
        span = rec.one(name)
        assert span.status.status_code == StatusCode.ERROR
        assert span.attributes["error.type"] == "KeyError"  # the tool's own exception, not the SDK wrapper


def test_provider_error_code_on_llm_and_agent_spans(rec: Any, instrumented: Any) -> None:
    with pytest.raises(openai.RateLimitError):
        run(Agent(name="Billing"), "[error:429] invoice")
    for span in rec.spans:
        assert span.status.status_code == StatusCode.ERROR
        assert span.attributes["error.type"] == "rate_limit_exceeded"


def test_responses_api_spans_take_the_model_from_the_response(rec: Any, instrumented: Any) -> None:
    agents.set_default_openai_api("responses")
    run(Agent(name="Writer", model="gpt-writer"), "draft a note")
    chat = rec.one("chat gpt-writer")
    assert chat.attributes["gen_ai.request.model"] == "gpt-writer"
    assert chat.attributes["gen_ai.response.id"].startswith("resp_fake_")
    assert chat.parent.span_id == rec.one("invoke_agent Writer").context.span_id
    assert chat.attributes["gen_ai.usage.output_tokens"] == 4  # "echo: draft a note"


def test_streamed_run_nests_and_leaves_no_context_behind(rec: Any, instrumented: Any) -> None:
    async def streamed() -> Any:
        async with fresh_client():
            result = Runner.run_streamed(
                Agent(name="Billing", tools=[lookup_invoice]), "[tool:lookup_invoice] q"
            )
            async for _ in result.stream_events():
                pass
            return result.final_output, trace.get_current_span().get_span_context().is_valid

    output, leaked = asyncio.run(streamed())
    assert output == "echo: invoice q: 42 EUR" and leaked is False
    agent = rec.one("invoke_agent Billing")
    assert rec.one("execute_tool lookup_invoice").parent.span_id == agent.context.span_id
    assert len({s.context.trace_id for s in rec.spans}) == 1


def test_run_inside_a_workflow_nests_there_and_decorated_tools_nest_under_the_sdk_tool(
    rec: Any, instrumented: Any
) -> None:
    @reach_otel.tool(name="ledger_query")
    def ledger(query: str) -> str:
        return f"ledger {query}"

    @function_tool
    def lookup(query: str) -> str:
        """Look up via a decorated helper."""
        return ledger(query)

    @reach_otel.workflow(name="support_turn")
    async def turn() -> Any:
        async with fresh_client():
            result = await Runner.run(Agent(name="Billing", tools=[lookup]), "[tool:lookup] 5")
            return result.final_output, trace.get_current_span().get_span_context().is_valid

    assert asyncio.run(turn()) == ("echo: ledger 5", True)
    assert trace.get_current_span().get_span_context().is_valid is False
    workflow = rec.one("invoke_workflow support_turn")
    assert not rec.named("invoke_workflow Agent workflow")  # the enclosing span is the root
    agent = rec.one("invoke_agent Billing")
    sdk_tool, ours = rec.one("execute_tool lookup"), rec.one("execute_tool ledger_query")
    assert agent.parent.span_id == workflow.context.span_id
    assert ours.parent.span_id == sdk_tool.context.span_id
    assert ours.attributes["reach.agent.name"] == "Billing"
    assert len({s.context.trace_id for s in rec.spans}) == 1


def test_generation_spans_are_left_to_our_openai_instrumentation(
    rec: Any, instrumented: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = types.ModuleType(processor._OPENAI_INSTRUMENTATION)
    fake.is_active = lambda: True  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, processor._OPENAI_INSTRUMENTATION, fake)
    run(Agent(name="Billing"), "hello")
    assert [s.name for s in rec.spans] == ["invoke_agent Billing", "invoke_workflow Agent workflow"]


def test_no_duplicate_llm_spans_with_our_openai_instrumentor(rec: Any, instrumented: Any) -> None:
    from reach_otel.instrumentation.openai import OpenAIInstrumentor

    openai_instrumentor = OpenAIInstrumentor()
    openai_instrumentor.instrument()
    try:
        run(Agent(name="Billing", tools=[lookup_invoice]), "[tool:lookup_invoice] 8")
    finally:
        openai_instrumentor.uninstrument()
    chats = chat_spans(rec)
    agent = rec.one("invoke_agent Billing")
    assert len(chats) == 2  # one per model call, made by the OpenAI instrumentor
    assert all(c.parent.span_id == agent.context.span_id for c in chats)
    assert all(c.attributes["reach.agent.name"] == "Billing" for c in chats)
    assert agent.attributes["reach.agent.llm_calls"] == 2


def test_instrument_uninstrument_instrument(rec: Any, sdk: Any) -> None:
    instrumentor = OpenAIAgentsInstrumentor()
    agent = Agent(name="Billing")
    instrumentor.instrument()
    instrumentor.instrument()  # idempotent
    run(agent, "one")
    instrumentor.uninstrument()
    run(agent, "two")
    instrumentor.instrument()
    try:
        run(agent, "three")
    finally:
        instrumentor.uninstrument()
    assert len(rec.named("invoke_agent Billing")) == 2
    registered = agents.tracing.get_trace_provider()._multi_processor._processors
    assert sum(isinstance(p, processor.ReachTracingProcessor) for p in registered) == 1


def test_tracer_provider_argument_is_honoured(make_recorder: Any, sdk: Any) -> None:
    explicit, default = make_recorder(), make_recorder()  # the second is the default handler now
    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument(tracer_provider=explicit.provider)
    try:
        run(Agent(name="Billing"), "hi")
    finally:
        instrumentor.uninstrument()
    assert explicit.one("invoke_agent Billing") and not default.spans


def test_user_processors_still_called_even_when_ours_fails(
    rec: Any, instrumented: Any, sdk: RecordingProcessor, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(Agent(name="Billing", tools=[lookup_invoice]), "[tool:lookup_invoice] 1")
    assert sdk.events[0] == "trace_start" and sdk.events[-1] == "trace_end"
    assert {"start:agent", "end:agent", "start:generation", "start:function"} <= set(sdk.events)

    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("telemetry bug")

    monkeypatch.setattr(processor, "_record_llm", explode)
    monkeypatch.setattr(processor, "json_or_text", explode)
    rec.clear()
    assert (
        run(Agent(name="Billing", tools=[lookup_invoice]), "[tool:lookup_invoice] 2")
        == "echo: invoice 2: 42 EUR"
    )
    assert len(chat_spans(rec)) == 2 and rec.one(
        "execute_tool lookup_invoice"
    )  # extraction failed, spans ended

    monkeypatch.setattr(processor.ReachTracingProcessor, "_start", explode)
    sdk.events.clear()
    assert (
        run(Agent(name="Billing", tools=[lookup_invoice]), "[tool:lookup_invoice] 3")
        == "echo: invoice 3: 42 EUR"
    )
    assert "end:function" in sdk.events

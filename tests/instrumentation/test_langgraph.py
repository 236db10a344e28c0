"""LangGraph instrumentation against the real langgraph, langchain-openai, langgraph-supervisor and
langgraph-swarm, the model being the local fake LLM (no network).

Also the OpenAI instrumentation's ``with_raw_response`` path, which is how langchain-openai calls it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from collector_process import CollectorProcess
from langchain_core.tracers import context as lc_context
from langgraph.errors import GraphRecursionError
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

import reach_otel
from reach_otel.instrumentation import instrument, registry
from reach_otel.instrumentation.langgraph import LangGraphInstrumentor, agents, callback, extract
from reach_otel.instrumentation.openai import OpenAIInstrumentor
from reach_otel.testing.fake_llm import FakeLLMServer

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import langgraph_apps as apps  # noqa: E402

# langgraph-supervisor builds its supervisor with create_react_agent, which LangGraph 1.x deprecates.
pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")

EXAMPLE = HERE.parents[1] / "examples" / "langgraph_supervisor" / "app.py"
CHAT = f"chat {apps.MODEL}"


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def lg(rec) -> Iterator[LangGraphInstrumentor]:
    instrumentor = LangGraphInstrumentor()
    instrumentor.instrument()
    yield instrumentor
    instrumentor.uninstrument()


@pytest.fixture
def oai(rec) -> Iterator[OpenAIInstrumentor]:
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument()
    yield instrumentor
    instrumentor.uninstrument()


@pytest.fixture
def model(llm: FakeLLMServer) -> Any:
    return apps.chat_model(llm.openai_base_url)


class Tree:
    """The finished spans of one trace, by id and by name."""

    def __init__(self, spans: list[ReadableSpan]) -> None:
        self.spans = sorted(spans, key=lambda s: s.start_time or 0)
        self.by_id = {s.context.span_id: s for s in self.spans}

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, f"{name}: {[s.name for s in self.spans]}"
        return found[0]

    def parent(self, span: ReadableSpan) -> ReadableSpan | None:
        return self.by_id.get(span.parent.span_id) if span.parent is not None else None

    def parent_name(self, span: ReadableSpan) -> str | None:
        parent = self.parent(span)
        return parent.name if parent is not None else None

    def roots(self) -> list[ReadableSpan]:
        return [s for s in self.spans if self.parent(s) is None]


def traces(rec) -> list[Tree]:
    grouped: dict[int, list[ReadableSpan]] = {}
    for span in rec.spans:
        grouped.setdefault(span.context.trace_id, []).append(span)
    return [Tree(spans) for spans in sorted(grouped.values(), key=lambda g: min(s.start_time for s in g))]


def one_trace(rec) -> Tree:
    found = traces(rec)
    assert len(found) == 1, [[s.name for s in t.spans] for t in found]
    return found[0]


def handoffs(tree: Tree) -> list[tuple[str, str, int]]:
    return [
        (
            s.attributes["reach.handoff.source"],
            s.attributes["reach.handoff.target"],
            s.attributes["reach.hop.count"],
        )
        for s in tree.spans
        if s.attributes.get("gen_ai.operation.name") == "handoff"
    ]


# -- the OpenAI instrumentation on langchain-openai's path ---------------------------------------------
def _client(llm: FakeLLMServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=llm.openai_base_url, api_key="test", max_retries=0)


MESSAGES = [{"role": "user", "content": "where is my invoice"}]  # 4 words in, 5 out


def test_raw_response_create_records_usage_once(rec, oai, llm) -> None:
    raw = _client(llm).chat.completions.with_raw_response.create(model="gpt-raw", messages=MESSAGES)
    assert raw.headers["x-request-id"].startswith("req_fake_")
    completion = raw.parse()
    assert completion.choices[0].message.content == "echo: where is my invoice"
    assert raw.parse() is completion
    span = rec.one("chat gpt-raw")
    assert span.attributes["gen_ai.usage.input_tokens"] == 4
    assert span.attributes["gen_ai.usage.output_tokens"] == 5
    assert span.attributes["gen_ai.response.model"] == "gpt-raw"
    assert span.attributes["gen_ai.response.finish_reasons"] == ("stop",)


def test_raw_response_stream_ends_its_span_with_the_stream(rec, oai, llm) -> None:
    raw = _client(llm).chat.completions.with_raw_response.create(
        model="gpt-raw", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    )
    assert rec.named("chat gpt-raw") == []
    text = "".join(c.choices[0].delta.content or "" for c in raw.parse() if c.choices)
    assert text == "echo: where is my invoice"
    span = rec.one("chat gpt-raw")
    assert span.attributes["gen_ai.usage.output_tokens"] == 5
    assert span.attributes["gen_ai.request.stream"] is True


def test_async_raw_responses_chat_and_responses_api(rec, oai, llm) -> None:
    async def run() -> None:
        client = openai.AsyncOpenAI(base_url=llm.openai_base_url, api_key="test", max_retries=0)
        raw = await client.chat.completions.with_raw_response.create(model="gpt-a", messages=MESSAGES)
        raw.parse()
        raw = await client.chat.completions.with_raw_response.create(
            model="gpt-a", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
        assert [c async for c in raw.parse()]
        raw = await client.responses.with_raw_response.create(model="gpt-r", input="where is my invoice")
        assert raw.parse().output_text == "echo: where is my invoice"

    asyncio.run(run())
    chats = rec.named("chat gpt-a")
    assert [s.attributes["gen_ai.request.stream"] for s in chats] == [False, True]
    for span in [*chats, rec.one("chat gpt-r")]:
        assert span.attributes["gen_ai.usage.input_tokens"] == 4
        assert span.attributes["gen_ai.usage.output_tokens"] == 5


def test_langchain_openai_chat_gets_usage_from_the_openai_instrumentation(rec, oai, model) -> None:
    assert model.invoke("where is my invoice").content == "echo: where is my invoice"
    span = rec.one(CHAT)
    assert span.kind == SpanKind.CLIENT
    assert span.attributes["gen_ai.usage.input_tokens"] == 4
    assert span.attributes["gen_ai.usage.output_tokens"] == 5
    assert span.attributes["server.address"] == "127.0.0.1"


# -- trace shape --------------------------------------------------------------------------------------
def test_graph_is_workflow_and_only_the_node_calling_a_model_is_an_agent(rec, lg, model) -> None:
    out = apps.pipeline(model).invoke(apps.user_text("where is my invoice"))
    assert out["messages"][-1].content == "echo: where is my invoice"
    tree = one_trace(rec)
    (root,) = tree.roots()
    assert root.name == "invoke_workflow pipeline"
    assert root.attributes["gen_ai.operation.name"] == "invoke_workflow"
    agent = tree.one("invoke_agent writer")
    assert tree.parent(agent) is root
    assert agent.attributes["gen_ai.agent.name"] == "writer"
    assert agent.attributes["reach.hop.count"] == 0
    assert not [s for s in tree.spans if "prepare" in s.name]
    chat = tree.one(CHAT)
    assert tree.parent(chat) is agent
    assert chat.kind == SpanKind.CLIENT
    assert chat.attributes["gen_ai.provider.name"] == "openai"
    assert chat.attributes["reach.agent.name"] == "writer"
    assert chat.attributes["gen_ai.usage.input_tokens"] == 4
    assert chat.attributes["gen_ai.usage.output_tokens"] == 5
    assert agent.attributes["gen_ai.usage.input_tokens"] == 4
    assert agent.attributes["gen_ai.usage.output_tokens"] == 5
    assert agent.attributes["reach.agent.llm_calls"] == 1
    assert agent.start_time <= chat.start_time and chat.end_time <= agent.end_time <= root.end_time


def test_with_the_openai_instrumentation_one_chat_span_per_model_call(rec, lg, oai, llm, model) -> None:
    llm.clear()
    apps.supervisor(model).invoke(apps.user_text("[tool:transfer_to_research_expert][tool:lookup] find x"))
    tree = one_trace(rec)
    chats = tree.named(CHAT)
    assert len(chats) == len(llm.requests) == 4
    for chat in chats:  # made by the OpenAI instrumentation, nested under its agent, with usage
        assert chat.attributes["server.port"] == llm.port
        assert tree.parent_name(chat) in ("invoke_agent supervisor", "invoke_agent research_expert")
        assert chat.attributes["gen_ai.usage.input_tokens"] > 0
    research = tree.one("invoke_agent research_expert")
    inner = [c for c in chats if tree.parent(c) is research]
    assert research.attributes["gen_ai.usage.input_tokens"] == sum(
        c.attributes["gen_ai.usage.input_tokens"] for c in inner
    )
    assert research.attributes["gen_ai.usage.output_tokens"] == sum(
        c.attributes["gen_ai.usage.output_tokens"] for c in inner
    )
    assert research.attributes["reach.agent.llm_calls"] == 2


def test_subgraph_node_is_one_agent_with_its_chats(rec, lg, model) -> None:
    apps.with_subgraph(model).invoke(apps.user_text("report"))
    tree = one_trace(rec)
    assert [s.name for s in tree.spans if s.name.startswith("invoke_")] == [
        "invoke_workflow report",
        "invoke_agent research",
    ]
    research = tree.one("invoke_agent research")
    chats = tree.named(CHAT)
    assert len(chats) == 2 and all(tree.parent(c) is research for c in chats)
    # "plan the research" and "summarise the findings": three words each
    assert research.attributes["gen_ai.usage.input_tokens"] == 6
    assert research.attributes["reach.agent.llm_calls"] == 2


def test_agent_node_spans_carry_their_graph_node_and_superstep(rec, lg, model) -> None:
    apps.routed(model).invoke(apps.user_text("my invoice"))
    apps.supervisor(model).invoke(apps.user_text("[tool:transfer_to_research_expert][tool:lookup] find x"))
    apps.with_subgraph(model).invoke(apps.user_text("report"))
    found = [
        (
            s.attributes["gen_ai.agent.name"],
            s.attributes.get("langgraph.node"),
            s.attributes.get("langgraph.step"),
        )
        for tree in traces(rec)
        for s in tree.spans
        if s.name.startswith("invoke_agent")
    ]
    assert found == [
        ("triage", "triage", 1),
        ("billing", "billing", 2),
        ("supervisor", "supervisor", 1),
        ("research_expert", "research_expert", 2),
        ("supervisor", "supervisor", 3),
        ("research", "research", 1),  # the subgraph's own nodes are steps of this agent, no spans
    ]
    assert not [
        s for s in rec.spans if "langgraph.step" in s.attributes and not s.name.startswith("invoke_agent")
    ]


def test_tools_are_execute_tool_spans_under_their_agent(rec, lg, model) -> None:
    apps.supervisor(model).invoke(apps.user_text("[tool:transfer_to_research_expert][tool:lookup] find x"))
    tree = one_trace(rec)
    tool = tree.one("execute_tool lookup")
    assert tree.parent_name(tool) == "invoke_agent research_expert"
    assert tool.attributes["gen_ai.tool.name"] == "lookup"
    assert tool.attributes["gen_ai.tool.call.id"].startswith("call_fake_")
    assert tool.attributes["reach.agent.name"] == "research_expert"
    assert tree.one("invoke_agent research_expert").attributes["reach.agent.tool_calls"] == 1
    assert not [s for s in tree.spans if s.name.startswith("execute_tool transfer")]


def test_content_is_captured_only_when_asked(make_recorder, llm, model) -> None:
    for capture in (False, True):
        rec = make_recorder(capture_content=capture)
        instrumentor = LangGraphInstrumentor()
        instrumentor.instrument()
        try:
            apps.supervisor(model).invoke(apps.user_text("[tool:transfer_to_research_expert][tool:lookup] x"))
        finally:
            instrumentor.uninstrument()
        tool = rec.one("execute_tool lookup")
        chat = rec.named(CHAT)[0]
        if capture:
            assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"query": "x"}
            assert "found x" in tool.attributes["gen_ai.tool.call.result"]
            assert "transfer_to_research_expert" in chat.attributes["gen_ai.input.messages"]
        else:
            assert "gen_ai.tool.call.arguments" not in tool.attributes
            assert "gen_ai.input.messages" not in chat.attributes


# -- one trace per invocation ---------------------------------------------------------------------------
def _run_twice(graph: Any, mode: str) -> list[Any]:
    inputs = [apps.user_text("first question"), apps.user_text("second question")]
    if mode == "invoke":
        return [graph.invoke(i) for i in inputs]
    if mode == "stream":
        return [list(graph.stream(i)) for i in inputs]

    async def run() -> list[Any]:
        if mode == "ainvoke":
            return [await graph.ainvoke(i) for i in inputs]
        streamed = []
        for i in inputs:
            streamed.append([chunk async for chunk in graph.astream(i)])
        return streamed

    return asyncio.run(run())


_MODES = [
    (build, mode)
    for build in (apps.pipeline, apps.async_pipeline, apps.with_subgraph)
    for mode in ("invoke", "ainvoke", "stream", "astream")
    if build is not apps.async_pipeline or mode.startswith("a")  # async nodes need ainvoke/astream
]


@pytest.mark.parametrize(("build", "mode"), _MODES, ids=[f"{b.__name__}-{m}" for b, m in _MODES])
def test_one_trace_per_invocation(rec, lg, model, mode, build) -> None:
    results = _run_twice(build(model), mode)
    assert all(results)
    found = traces(rec)
    assert len(found) == 2
    for tree in found:
        (root,) = tree.roots()
        assert root.name.startswith("invoke_workflow ")
        (agent,) = [s for s in tree.spans if s.name.startswith("invoke_agent")]
        assert tree.parent(agent) is root
        assert tree.named(CHAT) and all(tree.parent(c) is agent for c in tree.named(CHAT))


def test_concurrent_invocations_in_threads_stay_apart(rec, lg, model) -> None:
    graph = apps.with_subgraph(model)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            graph.invoke(apps.user_text("report"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    found = traces(rec)
    assert len(found) == 6
    for tree in found:
        research = tree.one("invoke_agent research")
        assert len(tree.named(CHAT)) == 2 and all(tree.parent(c) is research for c in tree.named(CHAT))


@pytest.mark.parametrize("mode", ["invoke", "ainvoke", "stream", "astream"])
def test_the_callers_context_is_left_as_it_was(rec, lg, oai, model, mode) -> None:
    from opentelemetry import context as otel_context

    before = otel_context.get_current()
    graph = apps.supervisor(model)
    text = apps.user_text("[tool:transfer_to_research_expert][tool:lookup] find x")

    async def run() -> Any:
        inside = otel_context.get_current()
        if mode == "ainvoke":
            await graph.ainvoke(text)
        else:
            _ = [chunk async for chunk in graph.astream(text)]
        assert otel_context.get_current() is inside

    if mode == "invoke":
        graph.invoke(text)
    elif mode == "stream":
        _ = list(graph.stream(text))
    else:
        asyncio.run(run())
    assert otel_context.get_current() is before
    assert len(traces(rec)) == 1


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_raw_client_calls_in_a_node_nest_under_its_agent(rec, lg, oai, llm, model, asynchronous) -> None:
    graph = apps.mixed_clients(model, llm.openai_base_url, asynchronous)
    if asynchronous:
        asyncio.run(graph.ainvoke(apps.user_text("go")))
    else:
        graph.invoke(apps.user_text("go"))
    tree = one_trace(rec)
    both, raw_only = tree.one("invoke_agent both"), tree.one("invoke_agent raw_only")
    assert tree.parent(tree.one(CHAT)) is both
    raw = tree.named("chat raw-model")
    assert len(raw) == 2 and {tree.parent(s).name for s in raw} == {
        "invoke_agent both",
        "invoke_agent raw_only",
    }
    assert raw_only.attributes["reach.agent.llm_calls"] == 1
    assert both.attributes["reach.agent.llm_calls"] == 2


def test_a_graph_inside_the_applications_own_workflow_stays_in_its_trace(rec, lg, model) -> None:
    @reach_otel.workflow(name="turn")
    def turn() -> Any:
        return apps.pipeline(model).invoke(apps.user_text("hello"))

    turn()
    tree = one_trace(rec)
    assert tree.parent_name(tree.one("invoke_workflow pipeline")) == "invoke_workflow turn"


# -- handoffs -----------------------------------------------------------------------------------------
def test_command_goto_to_an_agent_node_is_a_handoff(rec, lg, model) -> None:
    apps.routed(model).invoke(apps.user_text("my invoice"))
    tree = one_trace(rec)
    triage, billing = tree.one("invoke_agent triage"), tree.one("invoke_agent billing")
    handoff = tree.one("handoff billing")
    assert tree.parent(handoff) is triage
    attrs = handoff.attributes
    assert attrs["reach.handoff.source"] == "triage" and attrs["reach.handoff.target"] == "billing"
    assert attrs["reach.handoff.reason"] == "Command(goto)"
    assert attrs["reach.hop.count"] == 1 and attrs["reach.loop.detected"] is False
    assert attrs["reach.handoff.status"] == "committed"
    assert attrs["gen_ai.transfer.mode"] == "pass_control"
    assert billing.attributes["reach.hop.count"] == 1
    assert triage.attributes["reach.hop.count"] == 0
    assert handoff.start_time <= billing.start_time
    assert not [s for s in tree.spans if "audit" in s.name]  # a Command to a plain step is no handoff


def test_supervisor_transfer_tool_and_hand_back_are_handoffs(rec, lg, model) -> None:
    apps.supervisor(model).invoke(apps.user_text("[tool:transfer_to_research_expert][tool:lookup] find x"))
    tree = one_trace(rec)
    assert handoffs(tree) == [("supervisor", "research_expert", 1), ("research_expert", "supervisor", 2)]
    first_sup, second_sup = tree.named("invoke_agent supervisor")
    research = tree.one("invoke_agent research_expert")
    forward, back = tree.one("handoff research_expert"), tree.one("handoff supervisor")
    assert tree.parent(forward) is first_sup  # opened by the supervisor's transfer tool, inside it
    assert forward.attributes["reach.handoff.reason"] == "transfer_to_research_expert"
    assert forward.start_time < first_sup.end_time
    assert tree.parent(back) is research
    assert back.attributes["reach.handoff.reason"] == "transfer_back_to_supervisor"
    assert [a.attributes["reach.hop.count"] for a in (first_sup, research, second_sup)] == [0, 1, 2]
    assert {h.attributes["reach.handoff.status"] for h in (forward, back)} == {"committed"}
    assert all(tree.parent(a) is tree.roots()[0] for a in (first_sup, research, second_sup))


def test_supervisor_worker_ping_pong_is_detected_as_a_loop(rec, lg, model) -> None:
    apps.ping_pong(model).invoke(apps.user_text(apps.ping_pong_prompt(2)))
    tree = one_trace(rec)
    assert handoffs(tree) == [
        ("supervisor", "worker", 1),
        ("worker", "supervisor", 2),
        ("supervisor", "worker", 3),
        ("worker", "supervisor", 4),
    ]
    spans = [s for s in tree.spans if s.attributes.get("gen_ai.operation.name") == "handoff"]
    assert [s.attributes["reach.loop.detected"] for s in spans] == [False, False, True, True]
    (event,) = [e for e in spans[2].events if e.name == "reach.loop.detected"]
    assert tuple(event.attributes["reach.loop.cycle"]) == ("supervisor", "worker")
    assert tuple(event.attributes["reach.hop.path"]) == ("supervisor", "worker", "supervisor", "worker")
    workers = tree.named("invoke_agent worker")
    assert [w.attributes["reach.hop.count"] for w in workers] == [1, 3]
    assert all(len([c for c in tree.named(CHAT) if tree.parent(c) is w]) == 1 for w in workers)


def test_past_max_hops_the_library_records_its_hop_limit(make_recorder, llm, model) -> None:
    rec = make_recorder(max_hops=3)
    instrumentor = LangGraphInstrumentor()
    instrumentor.instrument()
    try:
        out = apps.ping_pong(model).invoke(apps.user_text(apps.ping_pong_prompt(2)))
    finally:
        instrumentor.uninstrument()
    assert out["messages"][-1].content.startswith("echo: ")
    spans = [s for s in rec.spans if s.attributes.get("gen_ai.operation.name") == "handoff"]
    assert [s.attributes.get("reach.hop.limit_exceeded", False) for s in spans] == [False, False, False, True]
    (event,) = [e for e in spans[3].events if e.name == "reach.hop.limit_exceeded"]
    assert event.attributes["reach.hop.count"] == 4 and event.attributes["reach.hop.limit"] == 3


def test_on_loop_raise_stops_the_graph_at_the_hop_limit(make_recorder, llm, model) -> None:
    rec = make_recorder(max_hops=2, on_loop="raise")
    instrumentor = LangGraphInstrumentor()
    instrumentor.instrument()
    try:
        with pytest.raises(reach_otel.HopLimitExceeded) as info:
            apps.ping_pong(model).invoke(apps.user_text(apps.ping_pong_prompt(3)))
    finally:
        instrumentor.uninstrument()
    assert info.value.hops == 3 and info.value.limit == 2
    root = one_trace(rec).roots()[0]
    assert root.status.status_code == StatusCode.ERROR
    assert root.attributes["error.type"] == "reach_otel.HopLimitExceeded"


def test_swarm_active_agent_switches_are_handoffs_and_the_bounce_a_loop(rec, lg, oai, model) -> None:
    prompt = "[tool:transfer_to_bob][tool:transfer_to_alice][tool:transfer_to_bob] hello"
    apps.swarm(model).invoke(apps.user_text(prompt))
    tree = one_trace(rec)
    assert handoffs(tree) == [("alice", "bob", 1), ("bob", "alice", 2), ("alice", "bob", 3)]
    agents_ = [s for s in tree.spans if s.name.startswith("invoke_agent")]
    assert [a.attributes["gen_ai.agent.name"] for a in agents_] == ["alice", "bob", "alice", "bob"]
    assert [a.attributes["reach.hop.count"] for a in agents_] == [0, 1, 2, 3]
    for handoff, source in zip(
        [s for s in tree.spans if s.name.startswith("handoff")], agents_, strict=False
    ):
        assert tree.parent(handoff) is source  # under the agent whose tool made it
    third = tree.spans[[s.name for s in tree.spans].index("handoff bob", tree.spans.index(agents_[2]))]
    assert third.attributes["reach.loop.detected"] is True


# -- agent rule overrides and other graph shapes ---------------------------------------------------------
def test_node_metadata_overrides_the_agent_rule(rec, lg, model) -> None:
    graph = apps.pipeline(model, prepare={"reach_otel.agent": "Planner"}, writer={"reach_otel.agent": False})
    graph.invoke(apps.user_text("hello"))
    tree = one_trace(rec)
    assert [s.name for s in tree.spans if s.name.startswith("invoke_agent")] == ["invoke_agent Planner"]
    assert tree.parent_name(tree.one(CHAT)) == "invoke_workflow pipeline"


def test_create_agent_graph_is_itself_the_agent(rec, lg, model) -> None:
    from langchain.agents import create_agent

    agent = create_agent(model, [apps.lookup], name="helper")
    agent.invoke(apps.user_text("[tool:lookup] the rate"))
    tree = one_trace(rec)
    (root,) = tree.roots()
    assert root.name == "invoke_workflow helper"
    helper = tree.one("invoke_agent helper")
    assert tree.parent(helper) is root
    assert {tree.parent_name(s) for s in [*tree.named(CHAT), tree.one("execute_tool lookup")]} == {
        "invoke_agent helper"
    }
    assert (
        helper.attributes["reach.agent.llm_calls"] == 2 and helper.attributes["reach.agent.tool_calls"] == 1
    )


def test_parallel_agents_each_get_a_handoff_from_the_agent_before(rec, lg, model) -> None:
    apps.fan_out(model).invoke(apps.user_text("go"))
    tree = one_trace(rec)
    lead = tree.one("invoke_agent lead")
    # The two branches run at once (Send): which one starts first, and so is hop 1, is the thread
    # pool's choice (south first now and then with the CPU busy).
    found = sorted(handoffs(tree))
    assert [(source, target) for source, target, _ in found] == [("lead", "north"), ("lead", "south")]
    assert sorted(hop for _, _, hop in found) == [1, 2]
    for name in ("north", "south"):
        agent = tree.one(f"invoke_agent {name}")
        assert tree.parent(agent) is tree.roots()[0]
        assert tree.parent(tree.one(f"handoff {name}")) is lead
        assert [tree.parent(c) for c in tree.named(CHAT)].count(agent) == 1


def test_an_agent_graph_run_by_a_tool_is_an_agent_under_the_tool(rec, lg, model) -> None:
    apps.agent_as_tool(model).invoke(apps.user_text("[tool:ask_researcher] the rate"))
    tree = one_trace(rec)
    tool = tree.one("execute_tool ask_researcher")
    researcher = tree.one("invoke_agent researcher")
    assert tree.parent(researcher) is tool
    assert [tree.parent(c) for c in tree.named(CHAT)].count(researcher) == 1


def test_an_interrupt_is_no_failure_and_the_resume_is_its_own_trace(rec, lg, model) -> None:
    from langgraph.types import Command

    graph = apps.interrupted(model)
    config = {"configurable": {"thread_id": "review-1"}}
    assert graph.invoke(apps.user_text("hi"), config)["__interrupt__"]
    assert graph.invoke(Command(resume="yes"), config)["messages"][-1].content == "review: yes"
    first, second = traces(rec)
    assert [s.name for s in first.spans] == ["invoke_workflow review", "invoke_agent draft", CHAT]
    assert [s.name for s in second.spans] == ["invoke_workflow review"]
    assert all(s.status.status_code != StatusCode.ERROR for s in rec.spans)


@pytest.mark.parametrize("with_openai", [False, True], ids=["callbacks", "openai-instrumentation"])
def test_a_streamed_model_call_has_time_to_first_chunk_and_usage(rec, lg, llm, with_openai) -> None:
    instrumentor = OpenAIInstrumentor()
    if with_openai:
        instrumentor.instrument()
    try:
        model = apps.chat_model(llm.openai_base_url, stream_usage=True)
        out = apps.streaming_writer(model).invoke(apps.user_text("[chunks:4] stream this please"))
    finally:
        if with_openai:
            instrumentor.uninstrument()
    assert out["messages"][-1].content == "echo: stream this please"
    tree = one_trace(rec)
    chat = tree.one(CHAT)
    assert tree.parent_name(chat) == "invoke_agent writer"
    assert chat.attributes["gen_ai.response.time_to_first_chunk"] > 0
    assert chat.attributes["gen_ai.usage.input_tokens"] == 4
    assert chat.attributes["gen_ai.usage.output_tokens"] == 4
    assert tree.one("invoke_agent writer").attributes["gen_ai.usage.output_tokens"] == 4
    assert ("server.port" in chat.attributes) is with_openai  # which of the two made the span


def test_a_thread_id_is_the_conversation_id(rec, lg, model) -> None:
    config = {"configurable": {"thread_id": "thread-7"}}
    apps.pipeline(model).invoke(apps.user_text("hello"), config)
    assert one_trace(rec).roots()[0].attributes["gen_ai.conversation.id"] == "thread-7"


# -- failures ---------------------------------------------------------------------------------------------
def test_a_node_error_propagates_unchanged_and_fails_its_spans(rec, lg, model) -> None:
    with pytest.raises(Exception, match="the ledger is closed") as info:
        apps.failing(model).invoke(apps.user_text("close"))
    assert type(info.value).__name__ == "LedgerClosed"
    tree = one_trace(rec)
    agent, root = tree.one("invoke_agent writer"), tree.roots()[0]
    for span in (agent, root):
        assert span.status.status_code == StatusCode.ERROR
        assert span.attributes["error.type"].endswith("LedgerClosed")
    assert tree.one(CHAT).status.status_code != StatusCode.ERROR


def test_the_recursion_limit_is_a_gate_on_the_workflow(rec, lg, model) -> None:
    with pytest.raises(GraphRecursionError):
        apps.looping(model).invoke(apps.user_text("go"), {"recursion_limit": 4})
    root = one_trace(rec).roots()[0]
    (gate,) = [e for e in root.events if e.name == "reach.gate.triggered"]
    assert gate.attributes["reach.gate.name"] == "recursion_limit"
    assert gate.attributes["reach.gate.limit"] == 4
    assert gate.attributes["reach.gate.observed"] == 4
    assert root.attributes["error.type"] == "langgraph.errors.GraphRecursionError"


@pytest.mark.parametrize(
    "target",
    [
        (extract, "chat_usage"),
        (extract, "node_step"),
        (extract, "command_targets"),
        (extract, "handoff_destination"),
        (agents, "promote"),
        (agents, "open_handoff"),
    ],
    ids=lambda t: t[1],
)
def test_an_exploding_extractor_changes_nothing_for_the_graph(rec, lg, model, monkeypatch, target) -> None:
    prompt = "[tool:transfer_to_research_expert][tool:lookup] find x"
    expected = [m.content for m in apps.supervisor(model).invoke(apps.user_text(prompt))["messages"]]

    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("extractor exploded")

    monkeypatch.setattr(*target, explode)
    got = [m.content for m in apps.supervisor(model).invoke(apps.user_text(prompt))["messages"]]
    assert got == expected
    with pytest.raises(Exception, match="the ledger is closed"):
        apps.failing(model).invoke(apps.user_text("close"))


@pytest.mark.parametrize("target", [(extract, "chat_usage"), (agents, "promote"), (extract, "node_step")])
def test_with_on_loop_raise_an_exploding_extractor_still_changes_nothing(
    make_recorder, model, monkeypatch, target
) -> None:
    """on_loop="raise" makes LangChain re-raise what our handler raises: only the hop limit may pass."""
    make_recorder(on_loop="raise")
    instrumentor = LangGraphInstrumentor()
    instrumentor.instrument()
    try:
        prompt = "[tool:transfer_to_research_expert][tool:lookup] find x"
        expected = [m.content for m in apps.supervisor(model).invoke(apps.user_text(prompt))["messages"]]
        assert instrumentor.handler is not None and instrumentor.handler.raise_error is True
        monkeypatch.setattr(*target, lambda *a, **k: 1 / 0)
        got = [m.content for m in apps.supervisor(model).invoke(apps.user_text(prompt))["messages"]]
    finally:
        instrumentor.uninstrument()
    assert got == expected


def test_callbacks_never_reach_langchains_error_log(rec, lg, model, monkeypatch, caplog) -> None:
    monkeypatch.setattr(extract, "chat_request", lambda *a: 1 / 0)
    apps.pipeline(model).invoke(apps.user_text("hello"))
    assert not [r for r in caplog.records if "callback" in r.getMessage() and r.levelname == "WARNING"]


# -- lifecycle ---------------------------------------------------------------------------------------------
def _ours(hook: Any) -> bool:
    return isinstance(hook[0].get(), callback.LangGraphCallbackHandler)


def test_uninstrument_restores_and_instrument_again_works(rec, model) -> None:
    instrumentor = LangGraphInstrumentor()
    before = list(lc_context._configure_hooks)
    instrumentor.instrument()
    instrumentor.instrument()  # idempotent: one hook
    assert len([h for h in lc_context._configure_hooks if _ours(h)]) == 1
    apps.pipeline(model).invoke(apps.user_text("one"))
    assert len(traces(rec)) == 1
    instrumentor.uninstrument()
    assert lc_context._configure_hooks == before
    rec.clear()
    apps.pipeline(model).invoke(apps.user_text("two"))
    assert rec.spans == []
    instrumentor.instrument()
    try:
        apps.pipeline(model).invoke(apps.user_text("three"))
    finally:
        instrumentor.uninstrument()
    assert [t.roots()[0].name for t in traces(rec)] == ["invoke_workflow pipeline"]


def test_registered_for_init_and_reach_otel_run(rec) -> None:
    assert registry()["langgraph"] == "reach_otel.instrumentation.langgraph:LangGraphInstrumentor"
    try:
        assert instrument("langgraph") == ["langgraph"]
    finally:
        LangGraphInstrumentor().uninstrument()


def test_init_applies_it_when_langgraph_is_imported_later() -> None:
    """langgraph is a namespace package: the import that arms the instrumentor is langgraph.pregel."""
    code = (
        "import reach_otel; reach_otel.init(); "
        "from reach_otel.instrumentation import waiting; assert 'langgraph' in waiting(); "
        "from langgraph.graph import StateGraph; "
        "from reach_otel.instrumentation.langgraph import LangGraphInstrumentor; "
        "print(LangGraphInstrumentor().is_instrumented_by_opentelemetry, 'langgraph' in waiting())"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_"))}
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:9"  # nothing is exported in this check
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "False"]


# -- the example, under reach-otel run, into a real collector -------------------------------------------
def _fetch(collector: CollectorProcess, trace_id: str, count: int) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:
        found = dict(collector.get(f"/api/traces/{trace_id}"))
        if len(found["spans"]) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_the_supervisor_example_under_reach_otel_run(tmp_path: Path) -> None:
    with CollectorProcess(tmp_path / "langgraph.duckdb") as collector:
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_", "_REACH_", "OPENAI_"))
        }
        env.update(OTEL_EXPORTER_OTLP_ENDPOINT=collector.url, OTEL_BSP_SCHEDULE_DELAY="100")
        command = [sys.executable, "-m", "reach_otel", "run", "--service-name", "support-desk", "--"]
        out = subprocess.run(
            [*command, sys.executable, str(EXAMPLE)], env=env, capture_output=True, text=True, timeout=180
        )
        assert out.returncode == 0, out.stderr[-4000:]
        assert "instrumented:" in out.stderr and "langgraph" in out.stderr
        lines = out.stdout.strip().splitlines()
        assert lines[0] == "billing_agent: echo: invoice INV-7: 42 EUR, paid on 3 March"
        assert lines[1] == "refund_agent: echo: refund for INV-7: approved, 42 EUR back within 5 days"
        listed = collector.wait_traces(2, service="support-desk")
        assert len(listed) == 2
        # workflow, three agents, two handoffs, four chats, one tool
        found = [_fetch(collector, t["trace_id"], 11) for t in listed]
    turns = sorted(found, key=lambda t: t["spans"][0]["start_time_unix_nano"])
    for trace, worker, tool in zip(
        turns, ("billing_agent", "refund_agent"), ("lookup_invoice", "refund_status"), strict=True
    ):
        spans = trace["spans"]
        by_id = {s["span_id"]: s for s in spans}
        (root,) = trace["roots"]
        assert root["name"] == "invoke_workflow support_desk" and root["service"] == "support-desk"
        assert root["attributes"]["gen_ai.conversation.id"] == "conversation-1"
        names = [s["name"] for s in spans if s["name"].startswith(("invoke_agent", "handoff"))]
        assert names == [
            "invoke_agent supervisor",
            f"handoff {worker}",
            f"invoke_agent {worker}",
            "handoff supervisor",
            "invoke_agent supervisor",
        ]
        (agent,) = [s for s in spans if s["name"] == f"invoke_agent {worker}"]
        assert agent["attributes"]["reach.hop.count"] == 1
        (tool_span,) = [s for s in spans if s["name"] == f"execute_tool {tool}"]
        assert tool_span["parent_span_id"] == agent["span_id"]
        chats = [s for s in spans if s["name"] == CHAT]
        assert len(chats) == 4
        for chat in chats:
            assert by_id[chat["parent_span_id"]]["name"] in (
                "invoke_agent supervisor",
                f"invoke_agent {worker}",
            )
            assert chat["attributes"]["gen_ai.usage.input_tokens"] > 0
        assert agent["attributes"]["gen_ai.usage.input_tokens"] == sum(
            c["attributes"]["gen_ai.usage.input_tokens"]
            for c in chats
            if c["parent_span_id"] == agent["span_id"]
        )

"""One request, one trace: a LangGraph node's span (or the span it runs under) is current from the
node's first line, whatever the node does before its first model call, under invoke, stream,
ainvoke, astream and in subgraphs.

In process on the real langgraph (the model being the local fake LLM, the HTTP call a loopback
service), and end to end: an app under ``reach-otel run`` whose workers open an MCP stdio session
and call an HTTP service before they ask the model, exported to a real collector.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from collector_process import CollectorProcess
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan

from reach_otel import semconv as sc
from reach_otel.instrumentation.httpx import HTTPXInstrumentor
from reach_otel.instrumentation.langgraph import LangGraphInstrumentor, references
from reach_otel.testing.fake_llm import FakeLLMServer

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import langgraph_apps as apps  # noqa: E402

APP = HERE / "langgraph_one_trace_app.py"
TOOLS_SERVICE = "langgraph_one_trace_tools"  # the stdio tools server's script

pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def service() -> Iterator[str]:
    """A loopback HTTP service the nodes call before anything else."""

    class Answer(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/stock"
    server.shutdown()
    server.server_close()


@pytest.fixture
def instrumented(rec) -> Iterator[None]:
    lg, http = LangGraphInstrumentor(), HTTPXInstrumentor()
    lg.instrument()
    http.instrument()
    yield
    http.uninstrument()
    lg.uninstrument()


# -- in process -------------------------------------------------------------------------------------------
def desk(model: Any, url: str, asynchronous: bool, seen: dict[str, Any]) -> Any:
    """supervisor (model, then ``Command(goto="worker")``) → worker (HTTP, then model) → audit (HTTP
    only: not an agent) → research (a subgraph whose first node calls HTTP, its second the model)."""

    def note(node: str) -> None:
        seen[node] = trace.get_current_span().get_span_context()

    def fetch(node: str) -> None:
        note(node)
        httpx.get(url, params={"by": node})

    async def afetch(node: str) -> None:
        note(node)
        async with httpx.AsyncClient() as client:
            await client.get(url, params={"by": node})

    if asynchronous:

        async def supervisor(state: MessagesState) -> Command[Any]:
            await afetch("supervisor")
            return Command(goto="worker", update={"messages": [await model.ainvoke("route")]})

        async def worker(state: MessagesState) -> dict[str, Any]:
            await afetch("worker")
            return {"messages": [await model.ainvoke("answer")]}

        async def audit(state: MessagesState) -> dict[str, Any]:
            await afetch("audit")
            return {}

        async def gather(state: MessagesState) -> dict[str, Any]:
            await afetch("gather")
            return {}

        async def summarise(state: MessagesState) -> dict[str, Any]:
            return {"messages": [await model.ainvoke("summarise")]}

    else:

        def supervisor(state: MessagesState) -> Command[Any]:  # type: ignore[misc]
            fetch("supervisor")
            return Command(goto="worker", update={"messages": [model.invoke("route")]})

        def worker(state: MessagesState) -> dict[str, Any]:  # type: ignore[misc]
            fetch("worker")
            return {"messages": [model.invoke("answer")]}

        def audit(state: MessagesState) -> dict[str, Any]:  # type: ignore[misc]
            fetch("audit")
            return {}

        def gather(state: MessagesState) -> dict[str, Any]:  # type: ignore[misc]
            fetch("gather")
            return {}

        def summarise(state: MessagesState) -> dict[str, Any]:  # type: ignore[misc]
            return {"messages": [model.invoke("summarise")]}

    inner = StateGraph(MessagesState)
    inner.add_node("gather", gather)
    inner.add_node("summarise", summarise)
    inner.add_edge(START, "gather")
    inner.add_edge("gather", "summarise")
    inner.add_edge("summarise", END)
    graph = StateGraph(MessagesState)
    graph.add_node("supervisor", supervisor, destinations=("worker",))
    graph.add_node("worker", worker)
    graph.add_node("audit", audit)
    graph.add_node("research", inner.compile())
    graph.add_edge(START, "supervisor")
    graph.add_edge("worker", "audit")
    graph.add_edge("audit", "research")
    graph.add_edge("research", END)
    return graph.compile(name="desk")


def run(graph: Any, mode: str) -> None:
    """One request; the caller's context is the same after it as before."""
    text = apps.user_text("where is my parcel")
    before = otel_context.get_current()
    if mode == "invoke":
        graph.invoke(text)
    elif mode == "stream":
        _ = list(graph.stream(text))
    else:

        async def go() -> None:
            inside = otel_context.get_current()
            if mode == "ainvoke":
                await graph.ainvoke(text)
            elif mode == "astream_events":
                _ = [event async for event in graph.astream_events(text, version="v2")]
            elif mode == "astream-messages":  # a streaming handler of LangGraph's own on every run
                _ = [chunk async for chunk in graph.astream(text, stream_mode="messages", subgraphs=True)]
            else:
                _ = [chunk async for chunk in graph.astream(text)]
            assert otel_context.get_current() is inside

        asyncio.run(go())
    assert otel_context.get_current() is before


def by_trace(spans: list[ReadableSpan]) -> dict[int, list[ReadableSpan]]:
    found: dict[int, list[ReadableSpan]] = {}
    for span in spans:
        found.setdefault(span.context.trace_id, []).append(span)
    return found


# sync nodes under invoke, stream and astream (an executor runs them); async nodes under ainvoke, astream
MODES = [
    (False, "invoke"),
    (False, "stream"),
    (False, "astream"),
    (True, "ainvoke"),
    (True, "astream"),
    (True, "astream-messages"),
    (True, "astream_events"),
]


@pytest.mark.parametrize(
    ("asynchronous", "mode"), MODES, ids=[f"{'async' if a else 'sync'}-{m}" for a, m in MODES]
)
def test_a_node_runs_in_its_requests_trace_from_its_first_line(
    rec, instrumented, llm, service, asynchronous, mode
) -> None:
    for _ in range(2):
        seen: dict[str, Any] = {}
        run(desk(apps.chat_model(llm.openai_base_url), service, asynchronous, seen), mode)
        roots = [s for s in rec.spans if s.name == "invoke_workflow desk"]
        assert len(roots) == 1
        (root,) = roots
        spans = by_trace(rec.spans)
        assert list(spans) == [root.context.trace_id], [[s.name for s in t] for t in spans.values()]
        tree = {s.context.span_id: s for s in rec.spans}
        agents = {
            s.attributes["gen_ai.agent.name"]: s for s in rec.spans if s.name.startswith("invoke_agent")
        }
        # audit (it calls no model) and the subgraph's nodes (steps of research) are no agents
        assert set(agents) == {"supervisor", "worker", "research"}
        gets = {s.attributes["url.full"].split("by=")[1]: tree[s.parent.span_id] for s in rec.named("GET")}
        assert gets == {
            "supervisor": agents["supervisor"],
            "worker": agents["worker"],  # before its first model call: under its agent all the same
            "audit": root,  # not an agent: under the span it runs under
            "gather": agents["research"],
        }
        current = {node: ctx.span_id for node, ctx in seen.items()}
        assert current == {
            "supervisor": agents["supervisor"].context.span_id,
            "worker": agents["worker"].context.span_id,
            "audit": root.context.span_id,
            "gather": agents["research"].context.span_id,
        }
        (handoff,) = rec.named("handoff worker")
        assert tree[handoff.parent.span_id] is agents["supervisor"]
        assert agents["worker"].attributes["reach.hop.count"] == 1
        assert all(tree[c.parent.span_id] in agents.values() for c in rec.named(f"chat {apps.MODEL}"))
        rec.clear()


@pytest.mark.parametrize("mode", ["ainvoke", "astream"])
@pytest.mark.parametrize("kind", ["lambda", "generator"])
def test_a_node_that_is_no_function_runs_in_its_requests_trace(
    rec, instrumented, llm, service, kind, mode
) -> None:
    """A RunnableLambda or a generator node: under the span around it until its model call."""
    model = apps.chat_model(llm.openai_base_url)

    async def answer(state: MessagesState) -> dict[str, Any]:
        async with httpx.AsyncClient() as client:
            await client.get(service)
        return {"messages": [await model.ainvoke("answer")]}

    def streamed(state: MessagesState) -> Iterator[dict[str, Any]]:
        httpx.get(service)
        yield {"messages": [model.invoke("answer")]}

    graph = StateGraph(MessagesState)
    graph.add_node("writer", RunnableLambda(answer) if kind == "lambda" else streamed)
    graph.add_edge(START, "writer")
    graph.add_edge("writer", END)
    run(graph.compile(name="desk"), mode)
    (root,) = rec.named("invoke_workflow desk")
    assert {s.context.trace_id for s in rec.spans} == {root.context.trace_id}
    (get,) = rec.named("GET")
    assert get.parent.span_id == root.context.span_id
    assert rec.one("invoke_agent writer").parent.span_id == root.context.span_id


def test_an_exploding_reader_leaves_the_node_in_its_trace(
    rec, instrumented, llm, service, monkeypatch
) -> None:
    """A failure in reading the node's code: it becomes an agent at its first model call, as before."""
    monkeypatch.setattr(references, "_referenced", lambda func: 1 / 0)
    seen: dict[str, Any] = {}
    run(desk(apps.chat_model(llm.openai_base_url), service, True, seen), "astream")
    (root,) = rec.named("invoke_workflow desk")
    assert {s.context.trace_id for s in rec.spans} == {root.context.trace_id}
    tree = {s.context.span_id: s for s in rec.spans}
    (get,) = [s for s in rec.named("GET") if s.attributes["url.full"].endswith("by=worker")]
    assert tree[get.parent.span_id] is root  # not yet its agent: it becomes one at its model call
    assert rec.one("invoke_agent worker").attributes["reach.hop.count"] == 1


def test_uninstrument_unwraps_the_node_runner(rec, llm, service) -> None:
    from langgraph._internal._runnable import RunnableCallable

    original = RunnableCallable.invoke, RunnableCallable.ainvoke
    instrumentor = LangGraphInstrumentor()
    instrumentor.instrument()
    assert RunnableCallable.invoke is not original[0]
    instrumentor.uninstrument()
    assert (RunnableCallable.invoke, RunnableCallable.ainvoke) == original


# -- what a node's code refers to -------------------------------------------------------------------------
class Desk:
    def __init__(self, model: Any) -> None:
        self.model = model

    def answer(self, state: Any) -> Any:
        return self.model.invoke("x")


def _node(func: Callable[..., Any]) -> Any:
    from langgraph._internal._runnable import RunnableCallable

    return RunnableCallable(func)


def test_the_reader_finds_models_and_graphs_as_langgraph_finds_subgraphs(llm) -> None:
    model = apps.chat_model(llm.openai_base_url)
    chain = ChatPromptTemplate.from_messages([("user", "{q}")]) | model.bind_tools([apps.lookup])
    graph = apps.pipeline(model)

    def closure(state: Any) -> Any:
        return model.invoke("x")

    def piped(state: Any) -> Any:
        return chain.invoke({"q": "x"})

    def runs_a_graph(state: Any) -> Any:
        return graph.invoke(state)

    def helper(state: Any) -> Any:
        return closure(state)

    def takes(state: Any, llm: Any) -> Any:
        return llm.invoke("x")

    def plain(state: Any) -> Any:
        return {"seen": len(state)}

    namespace = {"model": model}  # a function whose source is nowhere to be read (a REPL's, exec'd code)
    exec(compile("def sourceless(state):\n    return model.invoke('x')\n", "<input>", "exec"), namespace)

    for func in (
        closure,
        piped,
        runs_a_graph,
        helper,
        Desk(model).answer,
        functools.partial(takes, llm=model),
        namespace["sourceless"],
    ):
        assert references.reaches_a_model(_node(func)), func
    assert not references.reaches_a_model(_node(plain))
    assert not references.reaches_a_model(object())


# -- end to end: under reach-otel run, into a real collector -----------------------------------------------
def _wait_settled(
    collector: CollectorProcess, ready: Callable[[list[dict[str, Any]]], bool]
) -> list[dict[str, Any]]:
    """Every trace, once ``ready`` holds for their spans and no span has arrived for a second."""
    deadline = time.monotonic() + 60
    last = -1
    traces: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        listed = collector.get("/api/traces", limit=100)["traces"]
        traces = [collector.get(f"/api/traces/{t['trace_id']}") for t in listed]
        count = sum(len(t["spans"]) for t in traces)
        if count == last and ready([s for t in traces for s in t["spans"]]):
            return traces
        last = count
        time.sleep(1.0)
    return traces


def test_a_supervisor_app_whose_workers_call_mcp_and_http_first_is_one_trace_per_request(
    tmp_path: Path,
) -> None:
    with FakeLLMServer() as llm, CollectorProcess(tmp_path / "desk.duckdb") as collector:
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_", "_REACH_", "OPENAI_"))
        }
        env.update(
            OTEL_EXPORTER_OTLP_ENDPOINT=collector.url,
            OTEL_BSP_SCHEDULE_DELAY="100",
            OPENAI_BASE_URL=llm.openai_base_url,
            OPENAI_API_KEY="test",
        )
        command = [sys.executable, "-m", "reach_otel", "run", "--service-name", "desk", "--", sys.executable]
        out = subprocess.run(
            [*command, str(APP)], env=env, cwd=HERE, capture_output=True, text=True, timeout=180
        )
        assert out.returncode == 0, out.stderr[-4000:]
        printed = [json.loads(line) for line in out.stdout.splitlines()]
        assert [p["mode"] for p in printed] == ["invoke", "astream"]

        def ready(spans: list[dict[str, Any]]) -> bool:
            served = [s for s in spans if s["name"].startswith("tools/call") and s["kind"] == "SERVER"]
            return len(served) == 2 and len([s for s in spans if s["name"] == "invoke_workflow desk"]) == 2

        traces = _wait_settled(collector, ready)
        by_tool = collector.get("/api/metrics/golden", by="tool", window="15m")["groups"]
        by_operation = collector.get("/api/metrics/golden", by="operation", window="15m")["groups"]

    # Each MCP call once, though both its sides are traced (the served side under the caller's).
    assert {g["key"]: g["calls"] for g in by_tool} == {"get_forecast": 1, "get_budget": 1}
    assert {g["key"]: g["calls"] for g in by_operation}[sc.OP_TOOL] == 2

    # Exactly one trace per request: nothing the workers did before their model call is a root of its own.
    assert len(traces) == 2, [[s["name"] for s in t["roots"]] for t in traces]
    by_root = {}
    for trace_ in traces:
        (root,) = trace_["roots"]
        assert root["name"] == "invoke_workflow desk" and root["service"] == "desk"
        by_root[root["trace_id"]] = trace_
    for seen, worker, tool in zip(
        printed, ("weather_agent", "budget_agent"), ("get_forecast", "get_budget"), strict=True
    ):
        first_lines = seen["first_lines"]
        # every node's first line ran in the request's trace
        (trace_id,) = {t for ids in first_lines.values() for t in ids}
        assert set(first_lines) == {"supervisor", worker}
        spans = by_root[trace_id]["spans"]
        by_id = {s["span_id"]: s for s in spans}
        # The thread is the conversation of every span of the request: the app's own (HTTP and MCP
        # client calls included) and the tools server's.
        conversations = {s["name"]: s["attributes"].get("gen_ai.conversation.id") for s in spans}
        assert set(conversations.values()) == {f"conversation-{seen['mode']}"}, conversations
        (agent,) = [s for s in spans if s["name"] == f"invoke_agent {worker}"]
        assert agent["attributes"]["reach.hop.count"] == 1
        assert [s["name"] for s in spans if s["name"].startswith(("invoke_agent", "handoff"))] == [
            "invoke_agent supervisor",
            f"handoff {worker}",
            f"invoke_agent {worker}",
            "handoff supervisor",
            "invoke_agent supervisor",
        ]
        # The MCP session, the HTTP call and the model call: each directly under the worker's agent.
        mcp_client = [s for s in spans if s["kind"] == "CLIENT" and "mcp.method.name" in s["attributes"]]
        methods = [s["attributes"]["mcp.method.name"] for s in mcp_client]
        assert {"tools/list", "tools/call"} <= set(methods), methods
        assert all(s["parent_span_id"] == agent["span_id"] for s in mcp_client), [
            (s["name"], by_id.get(s["parent_span_id"], {}).get("name")) for s in mcp_client
        ]
        (http_call,) = [s for s in spans if s["name"] == "GET"]
        assert http_call["parent_span_id"] == agent["span_id"]
        assert http_call["attributes"]["url.full"].endswith("/rates")
        (worker_chat,) = [
            s for s in spans if s["name"] == "chat fake-model" and s["parent_span_id"] == agent["span_id"]
        ]
        assert worker_chat["start_time_unix_nano"] > http_call["start_time_unix_nano"]
        # The tools server continued the trace: its tool span under the worker's MCP call.
        (served,) = [s for s in spans if s["name"] == f"tools/call {tool}" and s["kind"] == "SERVER"]
        # Named after its own script, not after the app that started it (--service-name desk).
        assert served["service"] == TOOLS_SERVICE
        assert by_id[served["parent_span_id"]]["parent_span_id"] == agent["span_id"]

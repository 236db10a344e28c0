"""A LangGraph desk whose workers reach out before they think, for test_langgraph_one_trace.py.

    reach-otel run -- python langgraph_one_trace_app.py

A hand-built ``StateGraph``: the supervisor asks the model and routes with ``Command(goto=...)`` to
weather_agent or budget_agent. Each worker first opens an MCP stdio session to the desk's tools
server (langgraph_one_trace_tools.py: server/discover, tools/list, tools/call), then calls a
loopback HTTP service with httpx, and only then asks the model; it hands back to the supervisor,
which ends the turn. The first request runs with ``invoke`` (sync nodes), the second with
``astream`` (async nodes).

Nothing here knows about tracing but what it prints: one JSON line per request, with the trace id
current at each node's first line (null where no span was current). The model is ChatOpenAI on
``OPENAI_BASE_URL`` (the test's fake LLM).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import openai
from langchain_core.messages import AIMessage
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command
from mcp import Client, StdioServerParameters
from opentelemetry import trace

TOOLS = Path(__file__).with_name("langgraph_one_trace_tools.py")
#: worker → (MCP tool, its arguments, the keyword in a question that routes to it)
WORKERS = {
    "weather_agent": ("get_forecast", {"city": "Lisbon"}, "weather"),
    "budget_agent": ("get_budget", {"team": "travel"}, "budget"),
}
REQUESTS = (
    ("invoke", "What will the weather be in Lisbon tomorrow?"),
    ("astream", "How much travel budget is left?"),
)
SEEN: dict[str, list[str | None]] = {}


def first_line(node: str) -> None:
    """Note the trace current where a node's code starts."""
    ctx = trace.get_current_span().get_span_context()
    SEEN.setdefault(node, []).append(format(ctx.trace_id, "032x") if ctx.is_valid else None)


async def use_tools(tool: str, arguments: dict[str, Any]) -> str:
    server = StdioServerParameters(command=sys.executable, args=[str(TOOLS)])  # it names itself
    async with Client(server) as client:
        listed = await client.list_tools()
        assert tool in {t.name for t in listed.tools}
        result = await client.call_tool(tool, arguments)
    return "".join(getattr(block, "text", "") for block in result.content)


def route(state: MessagesState) -> str | None:
    """Where the supervisor sends the question; None once a worker has answered."""
    last = state["messages"][-1]
    if isinstance(last, AIMessage) and last.name in WORKERS:
        return None
    question = str(state["messages"][0].content).lower()
    return next(name for name, (_, _, keyword) in WORKERS.items() if keyword in question)


def build(model: ChatOpenAI, rates_url: str, asynchronous: bool) -> Any:
    def supervisor(state: MessagesState) -> Command[Any]:
        first_line("supervisor")
        target = route(state)
        if target is None:
            return Command(goto=END)
        reply = model.invoke(f"Route this question: {state['messages'][0].content}")
        return Command(goto=target, update={"messages": [reply]})

    async def asupervisor(state: MessagesState) -> Command[Any]:
        first_line("supervisor")
        target = route(state)
        if target is None:
            return Command(goto=END)
        reply = await model.ainvoke(f"Route this question: {state['messages'][0].content}")
        return Command(goto=target, update={"messages": [reply]})

    def worker(name: str) -> Callable[..., Any]:
        tool, arguments, _ = WORKERS[name]

        def work(state: MessagesState) -> Command[Any]:
            first_line(name)
            found = asyncio.run(use_tools(tool, arguments))
            rates = httpx.get(rates_url).json()
            reply = model.invoke(f"Answer with {found} (rates {rates})")
            return Command(goto="supervisor", update={"messages": [AIMessage(str(reply.content), name=name)]})

        async def awork(state: MessagesState) -> Command[Any]:
            first_line(name)
            found = await use_tools(tool, arguments)
            async with httpx.AsyncClient() as client:
                rates = (await client.get(rates_url)).json()
            reply = await model.ainvoke(f"Answer with {found} (rates {rates})")
            return Command(goto="supervisor", update={"messages": [AIMessage(str(reply.content), name=name)]})

        return awork if asynchronous else work

    graph = StateGraph(MessagesState)
    graph.add_node("supervisor", asupervisor if asynchronous else supervisor, destinations=(*WORKERS, END))
    for name in WORKERS:
        graph.add_node(name, worker(name), destinations=("supervisor",))
    graph.add_edge(START, "supervisor")
    return graph.compile(name="desk")


@contextmanager
def rates_service() -> Iterator[str]:
    """A loopback HTTP service the workers call before they ask the model."""

    class Rates(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"EUR": 1.0, "USD": 1.08}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Rates)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/rates"
    finally:
        server.shutdown()
        server.server_close()


def chat_model() -> ChatOpenAI:
    return ChatOpenAI(
        model="fake-model",
        base_url=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ.get("OPENAI_API_KEY", "offline"),
        max_retries=0,
        http_async_client=openai.DefaultAsyncHttpxClient(),
    )


def thread(mode: str) -> Any:
    """The run's conversation: a LangGraph thread."""
    return {"configurable": {"thread_id": f"conversation-{mode}"}}


async def streamed(graph: Any, question: str) -> None:
    async for _update in graph.astream({"messages": [("user", question)]}, thread("astream")):
        pass


def main() -> None:
    with rates_service() as rates_url:
        for mode, question in REQUESTS:
            SEEN.clear()
            graph = build(chat_model(), rates_url, asynchronous=mode == "astream")
            if mode == "invoke":
                graph.invoke({"messages": [("user", question)]}, thread("invoke"))
            else:
                asyncio.run(streamed(graph, question))
            print(json.dumps({"mode": mode, "first_lines": SEEN}), flush=True)


if __name__ == "__main__":
    main()

"""LangGraph apps for test_langgraph.py, built on the real packages, their model the fake LLM.

The fake model answers from directives in the last user message: ``[tool:NAME]`` makes it call
NAME, one per model call as tool results come back; with every tool answered it echoes the last
result. Handoff tools and hand-back messages count as tool results, so a directive list also
scripts who talks to whom.
"""

from __future__ import annotations

import warnings
from typing import Any

import openai
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, Send

with warnings.catch_warnings():  # create_react_agent moved to langchain.agents; the patterns still use it
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent
from langgraph_supervisor import create_supervisor
from langgraph_swarm import create_handoff_tool, create_swarm

MODEL = "fake-model"


def chat_model(base_url: str, **kwargs: Any) -> ChatOpenAI:
    """A ChatOpenAI on the fake LLM, with an async client of its own: langchain-openai otherwise
    shares one per base URL, bound to the event loop that first used it."""
    kwargs.setdefault("http_async_client", openai.DefaultAsyncHttpxClient())
    return ChatOpenAI(model=MODEL, base_url=base_url, api_key="test", max_retries=0, **kwargs)


@tool
def lookup(query: str) -> str:
    """Look a fact up."""
    return f"found {query}"


def react_agent(model: ChatOpenAI, tools: list[Any], name: str) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(model, tools, name=name)


def pipeline(model: ChatOpenAI, **node_metadata: dict[str, Any]) -> Any:
    """prepare (a plain step) → writer (calls the model) → END."""

    def prepare(state: MessagesState) -> dict[str, Any]:
        return {}

    def writer(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("prepare", prepare, metadata=node_metadata.get("prepare"))
    graph.add_node("writer", writer, metadata=node_metadata.get("writer"))
    graph.add_edge(START, "prepare")
    graph.add_edge("prepare", "writer")
    graph.add_edge("writer", END)
    return graph.compile(name="pipeline")


def async_pipeline(model: ChatOpenAI) -> Any:
    """The pipeline with async nodes: the model is awaited."""

    async def prepare(state: MessagesState) -> dict[str, Any]:
        return {}

    async def writer(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("prepare", prepare)
    graph.add_node("writer", writer)
    graph.add_edge(START, "prepare")
    graph.add_edge("prepare", "writer")
    graph.add_edge("writer", END)
    return graph.compile(name="pipeline")


def with_subgraph(model: ChatOpenAI) -> Any:
    """research (a compiled subgraph: plan → summarise, both calling the model) → END."""

    def plan(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke("plan the research")]}

    def summarise(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke("summarise the findings")]}

    inner = StateGraph(MessagesState)
    inner.add_node("plan", plan)
    inner.add_node("summarise", summarise)
    inner.add_edge(START, "plan")
    inner.add_edge("plan", "summarise")
    inner.add_edge("summarise", END)
    outer = StateGraph(MessagesState)
    outer.add_node("research", inner.compile())
    outer.add_edge(START, "research")
    outer.add_edge("research", END)
    return outer.compile(name="report")


def routed(model: ChatOpenAI) -> Any:
    """triage (model, then ``Command(goto="billing")``) → billing (model) → audit (a plain step)."""

    def triage(state: MessagesState) -> Command[Any]:
        reply = model.invoke("which team?")
        return Command(goto="billing", update={"messages": [reply]})

    def billing(state: MessagesState) -> Command[Any]:
        reply = model.invoke("answer the billing question")
        return Command(goto="audit", update={"messages": [reply]})

    def audit(state: MessagesState) -> dict[str, Any]:
        return {}

    graph = StateGraph(MessagesState)
    graph.add_node("triage", triage, destinations=("billing",))
    graph.add_node("billing", billing, destinations=("audit",))
    graph.add_node("audit", audit)
    graph.add_edge(START, "triage")
    graph.add_edge("audit", END)
    return graph.compile(name="desk")


def supervisor(model: ChatOpenAI) -> Any:
    """langgraph-supervisor: a supervisor and one react worker with the ``lookup`` tool."""
    research = react_agent(model, [lookup], "research_expert")
    return create_supervisor([research], model=model).compile(name="team")


def ping_pong(model: ChatOpenAI) -> Any:
    """langgraph-supervisor with a worker that asks the model on its own (so it never uses up the
    supervisor's directives): the supervisor sends to it as often as the user message says."""

    def work(state: MessagesState) -> dict[str, Any]:
        reply = model.invoke("do the work")
        return {"messages": [AIMessage(content=reply.content, name="worker")]}

    graph = StateGraph(MessagesState)
    graph.add_node("work", work)
    graph.add_edge(START, "work")
    graph.add_edge("work", END)
    return create_supervisor([graph.compile(name="worker")], model=model).compile(name="team")


def ping_pong_prompt(rounds: int) -> str:
    """Each round is a transfer and a hand-back, and each takes one directive slot."""
    return "[tool:transfer_to_worker][tool:back]" * rounds + " go"


def swarm(model: ChatOpenAI) -> Any:
    """langgraph-swarm: alice and bob, each with a handoff tool to the other."""
    alice = react_agent(model, [create_handoff_tool(agent_name="bob")], "alice")
    bob = react_agent(model, [create_handoff_tool(agent_name="alice")], "bob")
    return create_swarm([alice, bob], default_active_agent="alice").compile(name="swarm")


def failing(model: ChatOpenAI) -> Any:
    """writer calls the model, then raises the application's own error."""

    class LedgerClosed(Exception):
        pass

    def writer(state: MessagesState) -> dict[str, Any]:
        model.invoke(state["messages"])
        raise LedgerClosed("the ledger is closed")

    graph = StateGraph(MessagesState)
    graph.add_node("writer", writer)
    graph.add_edge(START, "writer")
    graph.add_edge("writer", END)
    return graph.compile(name="failing")


def looping(model: ChatOpenAI) -> Any:
    """ask (model) ↔ check (model) forever: LangGraph's recursion limit stops it."""

    def ask(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke("ask again")]}

    def check(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke("check again")]}

    graph = StateGraph(MessagesState)
    graph.add_node("ask", ask)
    graph.add_node("check", check)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", "check")
    graph.add_edge("check", "ask")
    return graph.compile(name="looping")


def user_text(text: str) -> dict[str, Any]:
    return {"messages": [("user", text)]}


def mixed_clients(model: ChatOpenAI, base_url: str, asynchronous: bool) -> Any:
    """A node that calls the model through LangChain, then the raw OpenAI client; and a node
    marked as an agent that calls only the raw client. Both in parallel after ``start``."""
    messages = [{"role": "user", "content": "raw question"}]

    def start(state: MessagesState) -> dict[str, Any]:
        return {}

    if asynchronous:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0)

        async def both(state: MessagesState) -> dict[str, Any]:
            first = await model.ainvoke("langchain question")
            await client.chat.completions.create(model="raw-model", messages=messages)
            return {"messages": [first]}

        async def raw_only(state: MessagesState) -> dict[str, Any]:
            await client.chat.completions.create(model="raw-model", messages=messages)
            return {}

    else:
        sync_client = openai.OpenAI(base_url=base_url, api_key="test", max_retries=0)

        def both(state: MessagesState) -> dict[str, Any]:  # type: ignore[misc]
            first = model.invoke("langchain question")
            sync_client.chat.completions.create(model="raw-model", messages=messages)
            return {"messages": [first]}

        def raw_only(state: MessagesState) -> dict[str, Any]:  # type: ignore[misc]
            sync_client.chat.completions.create(model="raw-model", messages=messages)
            return {}

    graph = StateGraph(MessagesState)
    graph.add_node("start", start)
    graph.add_node("both", both)
    graph.add_node("raw_only", raw_only, metadata={"reach_otel.agent": True})
    graph.add_edge(START, "start")
    graph.add_edge("start", "both")
    graph.add_edge("start", "raw_only")
    graph.add_edge("both", END)
    graph.add_edge("raw_only", END)
    return graph.compile(name="mixed")


def fan_out(model: ChatOpenAI) -> Any:
    """lead (model) sends to two analysts at once (Send), which both call the model."""

    def lead(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke("split the work")]}

    def route(state: MessagesState) -> list[Send]:
        return [Send("north", state), Send("south", state)]

    def north(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke("north numbers")]}

    def south(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke("south numbers")]}

    graph = StateGraph(MessagesState)
    graph.add_node("lead", lead)
    graph.add_node("north", north)
    graph.add_node("south", south)
    graph.add_edge(START, "lead")
    graph.add_conditional_edges("lead", route, ["north", "south"])
    graph.add_edge("north", END)
    graph.add_edge("south", END)
    return graph.compile(name="fan_out")


def agent_as_tool(model: ChatOpenAI) -> Any:
    """A react agent whose tool runs another agent graph (the researcher)."""
    researcher = react_agent(model, [], "researcher")

    @tool
    def ask_researcher(query: str) -> str:
        """Ask the researcher."""
        return str(researcher.invoke({"messages": [("user", query)]})["messages"][-1].content)

    return react_agent(model, [ask_researcher], "lead")


def interrupted(model: ChatOpenAI) -> Any:
    """draft (model) → review, which waits for a human (interrupt)."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import interrupt

    def draft(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke("draft a reply")]}

    def review(state: MessagesState) -> dict[str, Any]:
        verdict = interrupt("approve?")
        return {"messages": [AIMessage(content=f"review: {verdict}")]}

    graph = StateGraph(MessagesState)
    graph.add_node("draft", draft)
    graph.add_node("review", review)
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "review")
    graph.add_edge("review", END)
    return graph.compile(name="review", checkpointer=InMemorySaver())


def streaming_writer(model: ChatOpenAI) -> Any:
    """writer streams the model's reply."""

    def writer(state: MessagesState) -> dict[str, Any]:
        chunks = list(model.stream(state["messages"]))
        return {"messages": [AIMessage(content="".join(str(c.content) for c in chunks))]}

    graph = StateGraph(MessagesState)
    graph.add_node("writer", writer)
    graph.add_edge(START, "writer")
    graph.add_edge("writer", END)
    return graph.compile(name="streaming")

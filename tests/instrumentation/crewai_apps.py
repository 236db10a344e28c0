"""Crews that the CrewAI tests run in CrewAI's own environment (tests/crewai_env.py), on the fake LLM.

    python crewai_apps.py BASE_URL SCENARIO...

Plain CrewAI code: ``reach_otel.init()`` is the only line of ours, and it applies the CrewAI and
OpenAI instrumentations by itself; with ``CREWAI_APP_ZERO_CODE=1`` not even that (``reach-otel run``
starts the app). Each scenario prints one JSON line: its name, the crew's result
(or the exception's class), and the trace ids of the workflow spans its kickoffs produced. The model
is scripted by directives in the task texts (``[tool:NAME]``, ``[arg:KEY=VALUE]``, ``[error:400]``).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import reach_otel

if os.environ.get("CREWAI_APP_ZERO_CODE") != "1":  # else started by reach-otel run: not one line of ours
    reach_otel.init(service_name="crewai-app")

# Imported after init(), as an app would; instrumented either way (init() arms each on import).
import httpx
import openai
from crewai import LLM, Agent, Crew, Process, Task
from crewai.hooks import InterceptionPoint, get_hooks
from crewai.tools import tool
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

BASE_URL = sys.argv[1]


class Workflows(SpanProcessor):
    """Notes the trace id of every workflow span that ends, so a scenario can name its traces."""

    def __init__(self) -> None:
        self.trace_ids: list[str] = []

    def on_end(self, span: ReadableSpan) -> None:
        if span.name.startswith("invoke_workflow") and span.context is not None:
            self.trace_ids.append(format(span.context.trace_id, "032x"))


WORKFLOWS = Workflows()
trace.get_tracer_provider().add_span_processor(WORKFLOWS)  # type: ignore[attr-defined]


def llm() -> LLM:
    return LLM(model="openai/fake-model", base_url=BASE_URL, api_key="test")


@tool("lookup_invoice")
def lookup_invoice(query: str) -> str:
    """Look up an invoice; asks the billing model directly, through the openai client."""
    client = openai.OpenAI(base_url=BASE_URL, api_key="test")
    reply = client.chat.completions.create(
        model="billing-model", messages=[{"role": "user", "content": "INV-7 paid"}]
    )
    return f"INV-7: 42 EUR, {reply.choices[0].message.content}"


def to_coworker(tool_name: str, coworker: str, text: str, field: str = "task") -> str:
    """Directives that make the model call a delegation tool; ``text`` may hold directives itself."""
    return (
        f"[tool:{tool_name}][arg:coworker={quote(coworker, safe='')}]"
        f"[arg:{field}={quote(text, safe='')}][arg:context=none]"
    )


def delegate(coworker: str, text: str) -> str:
    return to_coworker("delegate_work_to_coworker", coworker, text)


def ask(coworker: str, text: str) -> str:
    return to_coworker("ask_question_to_coworker", coworker, text, "question")


def researcher(**kwargs: Any) -> Agent:
    return Agent(role="Researcher", goal="find the facts", backstory="a careful clerk", llm=llm(), **kwargs)


def writer(**kwargs: Any) -> Agent:
    return Agent(role="Writer", goal="write it up", backstory="a clear writer", llm=llm(), **kwargs)


# -- the crews ----------------------------------------------------------------------------------------------
def billing_crew() -> Crew:
    """Two tasks in sequence; the Writer delegates a lookup to the Researcher and asks it a question."""
    clerk = researcher(tools=[lookup_invoice], allow_delegation=False)
    author = writer(allow_delegation=True)
    first = Task(description="Find invoice INV-7 [tool:lookup_invoice]", expected_output="facts", agent=clerk)
    second = Task(
        description="Write the answer "
        + delegate("researcher", "Check invoice INV-7 [tool:lookup_invoice]")
        + ask("Researcher", "Is INV-7 paid?"),
        expected_output="an answer",
        agent=author,
    )
    return Crew(
        agents=[clerk, author], tasks=[first, second], process=Process.sequential, name="billing_crew"
    )


def hierarchical_crew() -> Crew:
    """A manager that delegates to the Researcher and consults the Writer."""
    clerk = researcher(tools=[lookup_invoice])
    author = writer()
    task = Task(
        description="Answer the customer "
        + delegate("Researcher", "Look up INV-7 [tool:lookup_invoice]")
        + ask("Writer", "How to phrase it?"),
        expected_output="an answer",
    )
    return Crew(
        agents=[clerk, author],
        tasks=[task],
        process=Process.hierarchical,
        manager_llm=llm(),
        name="managed_crew",
    )


def ping_pong_crew() -> Crew:
    """Three tasks, each delegating to the other agent: Writer, Researcher, Writer, Researcher.

    A coworker gets no delegation tools of its own, so the ping-pong runs across tasks — one
    request all the same: its hop state lives with the trace.
    """
    clerk = researcher(tools=[lookup_invoice], allow_delegation=True)
    author = writer(allow_delegation=True)
    tasks = [
        Task(description="Start " + delegate("Researcher", "Look it up"), expected_output="x", agent=author),
        Task(description="Check " + delegate("Writer", "Draft it"), expected_output="x", agent=clerk),
        Task(description="Redo " + delegate("Researcher", "Look again"), expected_output="x", agent=author),
    ]
    return Crew(agents=[clerk, author], tasks=tasks, name="ping_pong_crew")


def misdirected_crew() -> Crew:
    """The Writer delegates to a coworker that does not exist, then to one whose model call fails."""
    clerk = researcher()
    author = writer(allow_delegation=True)
    text = "Answer " + delegate("Nobody", "Do it") + delegate("Researcher", "Find it [error:400]")
    task = Task(description=text, expected_output="an answer", agent=author)
    return Crew(agents=[clerk, author], tasks=[task], name="misdirected_crew")


def failing_crew() -> Crew:
    clerk = researcher()
    task = Task(description="Find it [error:400]", expected_output="facts", agent=clerk)
    return Crew(agents=[clerk], tasks=[task], name="failing_crew")


def summary_crew() -> Crew:
    """One Writer task, no tools."""
    author = writer(allow_delegation=False)
    task = Task(description="Summarise the findings", expected_output="a summary", agent=author)
    return Crew(agents=[author], tasks=[task], name="summary_crew")


def lookup_crew() -> Crew:
    """One Researcher task with the lookup tool."""
    clerk = researcher(tools=[lookup_invoice], allow_delegation=False)
    task = Task(description="Find invoice INV-7 [tool:lookup_invoice]", expected_output="facts", agent=clerk)
    return Crew(agents=[clerk], tasks=[task], name="lookup_crew")


def support_flow() -> Any:
    """A flow whose methods call a service, kick off two crews and ask the model themselves."""
    from crewai.flow.flow import Flow, listen, start

    class SupportFlow(Flow):  # type: ignore[misc, type-arg]
        @start()
        def look_up(self) -> str:
            httpx.get(f"{BASE_URL}/models")
            return str(lookup_crew().kickoff().raw)

        @listen(look_up)
        def answer(self, found: str) -> str:
            draft = llm().call(f"Draft a reply from {found}")
            return f"{draft} | {summary_crew().kickoff().raw}"

    return SupportFlow()


# -- scenarios ----------------------------------------------------------------------------------------------
def kickoff(crew: Crew) -> dict[str, Any]:
    before = len(WORKFLOWS.trace_ids)
    try:
        outcome: dict[str, Any] = {"result": crew.kickoff().raw}
    except Exception as exc:  # the failing crew: its exception is the outcome
        outcome = {"error": type(exc).__name__}
    outcome["traces"] = WORKFLOWS.trace_ids[before:]
    return outcome


def flow() -> dict[str, Any]:
    before = len(WORKFLOWS.trace_ids)
    try:
        outcome: dict[str, Any] = {"result": str(support_flow().kickoff())}
    except Exception as exc:
        outcome = {"error": type(exc).__name__}
    outcome["traces"] = WORKFLOWS.trace_ids[before:]
    return outcome


def asynchronous() -> dict[str, Any]:
    """The billing crew through ``akickoff()`` (native async) and ``kickoff_async()`` (a thread)."""
    before = len(WORKFLOWS.trace_ids)

    async def both() -> list[str]:
        return [(await billing_crew().akickoff()).raw, (await billing_crew().kickoff_async()).raw]

    return {"results": asyncio.run(both()), "traces": WORKFLOWS.trace_ids[before:]}


def exploding() -> dict[str, Any]:
    """The billing crew with the instrumentation's extractors raising: the crew must not notice."""
    from reach_otel.instrumentation.crewai import extract

    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("extractor exploded")

    names = ("agent_name", "delegation_mode", "tool_arguments", "usage_tokens", "server_of", "coworker")
    saved = {name: getattr(extract, name) for name in names}
    for name in names:
        setattr(extract, name, explode)
    try:
        return kickoff(billing_crew())
    finally:
        for name, value in saved.items():
            setattr(extract, name, value)


def ours(point: InterceptionPoint) -> int:
    return sum(1 for hook in get_hooks(point) if "reach_otel" in getattr(hook, "__module__", ""))


def uninstrumented() -> dict[str, Any]:
    """uninstrument() takes our hooks off CrewAI (no spans); instrument() puts them back."""
    removed = reach_otel.uninstrument()
    hooks = ours(InterceptionPoint.EXECUTION_START) + ours(InterceptionPoint.EXECUTION_END)
    off = kickoff(billing_crew())
    applied = reach_otel.instrument("crewai", "openai")
    on = kickoff(billing_crew())
    return {**off, "removed": sorted(removed), "hooks_left": hooks, "applied": applied, "again": on}


SCENARIOS: dict[str, Callable[[], dict[str, Any]]] = {
    "billing": lambda: kickoff(billing_crew()),
    "hierarchical": lambda: kickoff(hierarchical_crew()),
    "ping_pong": lambda: kickoff(ping_pong_crew()),
    "misdirected": lambda: kickoff(misdirected_crew()),
    "failing": lambda: kickoff(failing_crew()),
    "async": asynchronous,
    "flow": flow,
    "exploding": exploding,
    "uninstrumented": uninstrumented,
}

if __name__ == "__main__":
    print(json.dumps({"hooks": ours(InterceptionPoint.EXECUTION_START), "openai": openai.__version__}))
    for name in sys.argv[2:]:
        print(json.dumps({"scenario": name, **SCENARIOS[name]()}), flush=True)

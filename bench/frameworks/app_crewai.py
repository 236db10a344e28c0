"""The CrewAI app measured: the tests' billing crew — two tasks in sequence, the Writer delegating a
lookup to the Researcher and asking it a question — on the fake LLM, in process.

One request is one ``kickoff()`` of a crew built once. The model's replies are scripted by
directives in the task texts, as in tests/instrumentation/crewai_apps.py; each agent's LLM is
CrewAI's native OpenAI provider with an openai client on :mod:`fake_transport` (no socket). The
unit is an agent's execution of a task, delegated ones included (counted once, in the probe).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar
from urllib.parse import quote

import fake_transport
import openai
from crewai import LLM, Agent, Crew, Process, Task
from crewai.tools import tool


def llm() -> Any:
    model = LLM(model="openai/fake-model", base_url=fake_transport.BASE_URL, api_key="test")
    model._client = openai.OpenAI(
        base_url=fake_transport.BASE_URL,
        api_key="test",
        # The crewai environment's openai (2.x) takes an httpx client; openai 3.x, installed where mypy
        # runs, is annotated for httpx2 only, though it accepts httpx at run time too.
        http_client=fake_transport.client(),  # type: ignore[arg-type]
    )
    return model


# crewai is not installed where mypy runs (it lives in the bench's own environment), so its ``tool``
# is untyped there: this says what the decorator takes; what it makes (a BaseTool) stays Any.
_tool: Callable[[str], Callable[[Callable[[str], str]], Any]] = tool


@_tool("lookup_invoice")
def lookup_invoice(query: str) -> str:
    """Look up an invoice."""
    return "INV-7: 42 EUR, paid"


def to_coworker(tool_name: str, coworker: str, text: str, field: str = "task") -> str:
    return (
        f"[tool:{tool_name}][arg:coworker={quote(coworker, safe='')}]"
        f"[arg:{field}={quote(text, safe='')}][arg:context=none]"
    )


def billing_crew() -> Crew:
    clerk = Agent(
        role="Researcher",
        goal="find the facts",
        backstory="a careful clerk",
        llm=llm(),
        tools=[lookup_invoice],
    )
    author = Agent(
        role="Writer", goal="write it up", backstory="a clear writer", llm=llm(), allow_delegation=True
    )
    first = Task(description="Find invoice INV-7 [tool:lookup_invoice]", expected_output="facts", agent=clerk)
    second = Task(
        description="Write the answer "
        + to_coworker("delegate_work_to_coworker", "researcher", "Check invoice INV-7 [tool:lookup_invoice]")
        + to_coworker("ask_question_to_coworker", "Researcher", "Is INV-7 paid?", "question"),
        expected_output="an answer",
        agent=author,
    )
    return Crew(
        agents=[clerk, author], tasks=[first, second], process=Process.sequential, name="billing_crew"
    )


class App:
    agents: ClassVar[list[str]] = ["Researcher", "Writer"]
    marker = "INV-7"  # a word of the request: in a span, content was recorded

    def __init__(self, tracer: str) -> None:
        self.crew = billing_crew()
        self._tasks: float | None = None

    def request(self) -> None:
        self.crew.kickoff()

    def run(self, runs: int) -> None:
        for _ in range(runs):
            self.request()

    def units(self) -> dict[str, float]:
        if self._tasks is None:
            executions = 0
            original = Agent.execute_task

            def counted(agent: Agent, *args: Any, **kwargs: Any) -> Any:
                nonlocal executions
                executions += 1
                return original(agent, *args, **kwargs)

            Agent.execute_task = counted
            try:
                self.request()
            finally:
                Agent.execute_task = original
            self._tasks = float(executions)
        return {"task": self._tasks}

    def callers(self, system_prompts: list[str]) -> list[str] | None:
        """Who made each LLM call: CrewAI's system prompt opens with the agent's role."""
        return [next((a for a in self.agents if p.startswith(f"You are {a}")), "?") for p in system_prompts]

    def extra_cpu(self) -> float:
        return 0.0

    def probe_extra(self, capture: Any, flush: Callable[[], None]) -> dict[str, Any]:
        return {}

"""A billing crew in CrewAI: a Researcher who looks invoices up and a Writer who answers the customer,
delegating a check to the Researcher and asking it a question on the way.

    python examples/crewai_crew/app.py                       # prints the crew's answer
    reach-otel run -- python examples/crewai_crew/app.py     # the same, traced; no code change

Nothing here knows about tracing: under ``reach-otel run`` the kickoff is one trace — the crew as
the workflow, each task's agent, the delegation and the question as handoffs with their hop counts,
the tool, and every model call under the agent that made it, with its tokens. See README.md.

The model is CrewAI's LLM against a local fake OpenAI-compatible server, started here unless
OPENAI_BASE_URL points at one; directives in the task texts (``[tool:NAME]``, ``[arg:KEY=VALUE]``)
script which tools the model calls.
"""

from __future__ import annotations

import os
import textwrap
from contextlib import ExitStack
from urllib.parse import quote

# CrewAI's own telemetry, cloud tracing and version check would reach out to the network: off,
# unless the environment says otherwise.
for _name, _value in {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "CREWAI_TRACING_ENABLED": "false",
    "CREWAI_DISABLE_VERSION_CHECK": "true",
}.items():
    os.environ.setdefault(_name, _value)

from crewai import LLM, Agent, Crew, Process, Task  # noqa: E402
from crewai.tools import tool  # noqa: E402


@tool("lookup_invoice")
def lookup_invoice(query: str) -> str:
    """Look an invoice up: its amount and whether it was paid."""
    return "invoice INV-7: 42 EUR, paid on 3 March"


def to_coworker(tool_name: str, coworker: str, text: str, field: str) -> str:
    """The directives that make the fake model call one of CrewAI's delegation tools."""
    return (
        f"[tool:{tool_name}][arg:coworker={quote(coworker, safe='')}]"
        f"[arg:{field}={quote(text, safe='')}][arg:context=none]"
    )


def build(llm: LLM) -> Crew:
    researcher = Agent(
        role="Researcher",
        goal="find the facts about an invoice",
        backstory="a careful billing clerk",
        tools=[lookup_invoice],
        allow_delegation=False,
        llm=llm,
    )
    writer = Agent(
        role="Writer",
        goal="answer the customer clearly",
        backstory="a support writer",
        allow_delegation=True,
        llm=llm,
    )
    find = Task(
        description="Find invoice INV-7 [tool:lookup_invoice]",
        expected_output="the invoice's facts",
        agent=researcher,
    )
    answer = Task(
        description="Answer the customer: was INV-7 paid? "
        + to_coworker(
            "delegate_work_to_coworker", "Researcher", "Check invoice INV-7 [tool:lookup_invoice]", "task"
        )
        + to_coworker("ask_question_to_coworker", "Researcher", "Is INV-7 paid?", "question"),
        expected_output="an answer for the customer",
        agent=writer,
    )
    return Crew(
        agents=[researcher, writer], tasks=[find, answer], process=Process.sequential, name="billing_crew"
    )


def main() -> None:
    with ExitStack() as stack:
        base_url = os.environ.get("OPENAI_BASE_URL")
        if not base_url:
            from reach_otel.testing.fake_llm import FakeLLMServer

            base_url = stack.enter_context(FakeLLMServer()).openai_base_url
        llm = LLM(
            model="openai/fake-model", base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY", "offline")
        )
        result = build(llm).kickoff()
        print(f"answer: {textwrap.shorten(result.raw, 100)}", flush=True)


if __name__ == "__main__":
    main()

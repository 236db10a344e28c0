"""A support desk in LangGraph: a supervisor and two workers, built with langgraph-supervisor.

    python examples/langgraph_supervisor/app.py                      # prints each worker's answer
    reach-otel run -- python examples/langgraph_supervisor/app.py    # the same, traced; no code change

The supervisor hands the first question to billing_agent, which looks the invoice up, and the
second to refund_agent, which checks the refund; each worker hands back to the supervisor. The two
turns are one conversation (a checkpointer keeps it under one thread id). Nothing here knows about
tracing: under ``reach-otel run`` each turn is one trace — the graph, the supervisor and worker
agents, their model calls and tools, the handoffs with their hop counts. See README.md.

The model is ChatOpenAI against a local fake LLM, started here unless OPENAI_BASE_URL points at
one; directives in the user message (``[tool:NAME]``) script which tools the model calls.
"""

from __future__ import annotations

import os
import warnings
from contextlib import ExitStack
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph_supervisor import create_supervisor

MODEL = "fake-model"
CONFIG: Any = {"configurable": {"thread_id": "conversation-1"}}
TURNS = (
    ("billing_agent", "[tool:transfer_to_billing_agent][tool:lookup_invoice] Was invoice INV-7 paid?"),
    ("refund_agent", "[tool:transfer_to_refund_agent][tool:refund_status] Where is my refund for INV-7?"),
)


@tool
def lookup_invoice(query: str) -> str:
    """Find an invoice and whether it was paid."""
    return "invoice INV-7: 42 EUR, paid on 3 March"


@tool
def refund_status(query: str) -> str:
    """Where a refund stands."""
    return "refund for INV-7: approved, 42 EUR back within 5 days"


def build(model: ChatOpenAI) -> Any:
    billing = create_agent(
        model, [lookup_invoice], name="billing_agent", system_prompt="You answer invoices."
    )
    refunds = create_agent(model, [refund_status], name="refund_agent", system_prompt="You answer refunds.")
    with (
        warnings.catch_warnings()
    ):  # langgraph-supervisor builds its own agent with an API LangGraph 1.x deprecates
        warnings.simplefilter("ignore")
        team = create_supervisor(
            [billing, refunds],
            model=model,
            prompt="Route invoice questions to billing_agent and refund questions to refund_agent.",
        )
    return team.compile(name="support_desk", checkpointer=InMemorySaver())


def answer_of(state: Any, worker: str) -> str:
    """The worker's last answer in the conversation."""
    for message in reversed(state["messages"]):
        if isinstance(message, AIMessage) and message.name == worker and not message.tool_calls:
            return str(message.content)
    return "(no answer)"


def main() -> None:
    with ExitStack() as stack:
        base_url = os.environ.get("OPENAI_BASE_URL")
        if not base_url:
            from reach_otel.testing.fake_llm import FakeLLMServer

            base_url = stack.enter_context(FakeLLMServer()).openai_base_url
        model = ChatOpenAI(
            model=MODEL, base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY", "offline")
        )
        desk = build(model)
        (first_worker, first), (second_worker, second) = TURNS
        state = desk.invoke({"messages": [("user", first)]}, CONFIG)
        print(f"{first_worker}: {answer_of(state, first_worker)}", flush=True)
        for _update in desk.stream({"messages": [("user", second)]}, CONFIG):  # the second turn, streamed
            pass
        state = desk.get_state(CONFIG).values
        print(f"{second_worker}: {answer_of(state, second_worker)}", flush=True)


if __name__ == "__main__":
    main()

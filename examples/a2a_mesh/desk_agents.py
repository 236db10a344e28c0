"""Two A2A agents of a support desk: Triage routes a customer's question, Billing answers money matters.

Triage hands a question about invoices, refunds or charges to Billing and answers the rest itself.
Billing answers with the LLM; a question with a technical side it first sends back to Triage, once
(``[via Billing]`` in the text says it already did) — so "a refund for the login outage" goes
Triage → Billing → Triage → Billing: the ping-pong reach_otel reports as a loop. Both speak A2A
through the ``a2a-sdk``; the LLM is called through the ``openai`` client (``OPENAI_BASE_URL``).
Nothing here imports reach_otel: ``reach-otel run`` traces it from outside.
"""

from __future__ import annotations

import os
from typing import Any

from a2a.client import ClientConfig, create_client
from a2a.helpers import get_message_text, new_task_from_user_message, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Role,
    SendMessageRequest,
    TaskState,
)
from openai import AsyncOpenAI
from starlette.applications import Starlette

BILLING_WORDS = ("invoice", "refund", "charge", "bill")
TECH_WORDS = ("login", "password", "outage", "error")
MODEL = os.environ.get("MESH_MODEL", "fake-model")


async def ask_llm(system: str, question: str) -> str:
    llm = AsyncOpenAI()
    try:
        answer = await llm.chat.completions.create(
            model=MODEL,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": question}],
        )
    finally:
        await llm.close()
    return answer.choices[0].message.content or ""


async def delegate(url: str, text: str) -> tuple[str, str]:
    """Send ``text`` to the agent at ``url``; returns (final task state, its answer)."""
    client = await create_client(url, ClientConfig(streaming=True))
    state, answer = "unknown", ""
    try:
        message = new_text_message(text, role=Role.ROLE_USER)
        async for event in client.send_message(SendMessageRequest(message=message)):
            status = None
            if event.HasField("task"):
                status = event.task.status
            elif event.HasField("status_update"):
                status = event.status_update.status
            elif event.HasField("message"):
                return "completed", get_message_text(event.message)
            if status is not None:
                state = TaskState.Name(status.state).removeprefix("TASK_STATE_").lower()
                if status.HasField("message"):
                    answer = get_message_text(status.message)
    finally:
        await client.close()
    return state, answer


class DeskAgent(AgentExecutor):
    """One agent of the desk: decides to answer or to hand the question on."""

    name = "Agent"
    system = "You are a helpful support agent."

    def route(self, question: str) -> str | None:
        """The URL of the agent to hand ``question`` to, or None to answer it here."""
        return None

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        question = get_message_text(context.message)
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        target = self.route(question)
        if target is None:
            answer = await ask_llm(self.system, question)
        else:
            state, reply = await delegate(target, f"{question} [via {self.name}]")
            if state != "completed":
                await updater.failed(new_text_message(f"{self.name}: the handoff ended {state}"))
                return
            answer = reply
        await updater.complete(new_text_message(answer))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


class TriageAgent(DeskAgent):
    name = "Triage"
    system = "You triage customer questions and answer general ones."

    def route(self, question: str) -> str | None:
        if any(word in question.lower() for word in BILLING_WORDS):
            return os.environ["BILLING_URL"]
        return None


class BillingAgent(DeskAgent):
    name = "Billing"
    system = "You answer questions about invoices, refunds and charges."

    def route(self, question: str) -> str | None:
        technical = any(word in question.lower() for word in TECH_WORDS)
        if technical and "[via Billing]" not in question:  # the technical part goes back, once
            return os.environ["TRIAGE_URL"]
        return None


AGENTS: dict[str, type[DeskAgent]] = {"triage": TriageAgent, "billing": BillingAgent}


def agent_card(role: str, url: str) -> AgentCard:
    agent = AGENTS[role]
    return AgentCard(
        name=agent.name,
        description=agent.system,
        version="1.0",
        capabilities=AgentCapabilities(streaming=True),
        supported_interfaces=[AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0", url=url)],
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id=role, name=role, description=agent.system, tags=[role])],
    )


def create_app(role: str, port: int) -> Any:
    card = agent_card(role, f"http://127.0.0.1:{port}/")
    handler = DefaultRequestHandler(
        agent_executor=AGENTS[role](), task_store=InMemoryTaskStore(), agent_card=card
    )
    return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")])

"""A2A agents for test_a2a.py: real ``a2a-sdk`` servers under uvicorn, steered by the message text.

    python a2a_agents.py serve NAME PORT       # the agent NAME (its AgentCard name) on 127.0.0.1:PORT
    python a2a_agents.py serve-grpc NAME PORT  # the same over A2A's gRPC binding

The server calls ``reach_otel.init()`` (spans to ``OTEL_EXPORTER_OTLP_ENDPOINT``). ``A2A_PEERS``
names the other agents (``triage=http://127.0.0.1:P,billing=...``). ``A2A_TEST_EXPLODE=1`` makes
the instrumentation's extractors raise, to show the agents answer the same; ``A2A_TEST_LEGACY=1``
serves with the SDK's ``LegacyRequestHandler`` and speaks A2A 0.3 (clients take the compat transport).

Words in the message steer the agent (the rest is the question):
``route=billing,triage`` — delegate to the first agent named, passing the rest of the route on;
``via=stream`` — delegate with ``message/stream`` instead of ``message/send``;
``outcome=...`` — at the end of the route: ``completed`` (default: the LLM answers, through the
real ``openai`` client), ``failed``, ``rejected``, ``canceled``, ``raise`` (the executor raises),
``message`` (a direct reply, no task), ``slow`` (two seconds, then completed), ``headers`` (answers
with the trace headers it received); ``first=fetch`` — the executor's very first line is an HTTP GET
(``httpx``) to the fake LLM, before it publishes anything (not passed on along a route).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from a2a.client import ClientCallContext, ClientConfig, create_client
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

TRACE_HEADERS = ("traceparent", "tracestate", "baggage")


@dataclass
class Reply:
    """What a client saw: the last task state (or ``message`` for a direct reply) and the text."""

    state: str | None = None
    text: str = ""
    events: list[str] = field(default_factory=list)
    task_id: str | None = None
    context_id: str | None = None


def _record(reply: Reply, event: Any) -> None:
    kind = event.WhichOneof("payload")
    reply.events.append(kind)
    if kind == "message":
        reply.state, reply.text = "message", get_message_text(event.message)
        reply.context_id = event.message.context_id or reply.context_id
        return
    if kind == "task":
        task = event.task
        reply.task_id, reply.context_id = task.id, task.context_id
        status = task.status
    elif kind == "status_update":
        status = event.status_update.status
    else:
        return
    reply.state = TaskState.Name(status.state).removeprefix("TASK_STATE_").lower()
    if status.HasField("message"):
        reply.text = get_message_text(status.message)


async def send(
    url: str | AgentCard,
    text: str,
    *,
    stream: bool = False,
    timeout: float | None = None,
    context_id: str | None = None,
) -> Reply:
    """Send one message to the agent at ``url`` (its card fetched first) or of a card (a gRPC
    agent's: it serves no HTTP to fetch one from), and collect the answer."""
    config = ClientConfig(streaming=stream)
    if isinstance(url, AgentCard):
        import grpc

        config = ClientConfig(
            streaming=stream,
            supported_protocol_bindings=["GRPC"],
            grpc_channel_factory=grpc.aio.insecure_channel,
        )
    client = await create_client(url, config)
    reply = Reply()
    try:
        message = new_text_message(text, role=Role.ROLE_USER, context_id=context_id)
        context = ClientCallContext(timeout=timeout) if timeout is not None else None
        async for event in client.send_message(SendMessageRequest(message=message), context=context):
            _record(reply, event)
    finally:
        await client.close()
    return reply


def directives(text: str) -> tuple[dict[str, str], str]:
    words, rest = {}, []
    for word in text.split():
        key, sep, value = word.partition("=")
        if sep and key in ("route", "via", "outcome", "first"):
            words[key] = value
        else:
            rest.append(word)
    return words, " ".join(rest)


def peers() -> dict[str, str]:
    pairs = [p.split("=", 1) for p in os.environ.get("A2A_PEERS", "").split(",") if "=" in p]
    return {name: url for name, url in pairs}


async def ask_llm(question: str) -> str:
    from openai import AsyncOpenAI

    client = AsyncOpenAI()  # OPENAI_BASE_URL points at the fake LLM
    try:
        answer = await client.chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": question}]
        )
    finally:
        await client.close()
    return answer.choices[0].message.content or ""


async def fetch_first() -> None:
    """An HTTP call of the agent's own, made before anything else it does."""
    import httpx

    async with httpx.AsyncClient() as client:
        await client.get(os.environ["OPENAI_BASE_URL"].rstrip("/") + "/models", timeout=10)


class ScriptedAgent(AgentExecutor):
    def __init__(self, name: str) -> None:
        self.name = name

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        if "first=fetch" in get_message_text(context.message):
            await fetch_first()
        assert context.message is not None
        words, question = directives(get_message_text(context.message))
        route = [r for r in words.get("route", "").split(",") if r]
        outcome = words.get("outcome", "completed")
        if outcome == "message" and not route:
            await event_queue.enqueue_event(
                new_text_message(f"{self.name}: {question}", context_id=context.context_id)
            )
            return
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if outcome == "rejected" and not route:  # refused before any work
            await updater.reject(self.say("not mine"))
            return
        await updater.start_work()
        if route:
            onward = " ".join(
                [
                    f"route={','.join(route[1:])}",
                    f"outcome={outcome}",
                    f"via={words.get('via', 'send')}",
                    question,
                ]
            )
            reply = await send(peers()[route[0]], onward, stream=words.get("via") == "stream")
            await updater.complete(self.say(f"{self.name} < {reply.state}: {reply.text}"))
            return
        if outcome == "failed":
            await updater.failed(self.say("cannot do that"))
        elif outcome == "canceled":
            await updater.cancel(self.say("stopped"))
        elif outcome == "raise":
            raise RuntimeError("agent broke")
        elif outcome == "headers":
            state = context.call_context.state if context.call_context else {}
            headers = {k: v for k, v in (state.get("headers") or {}).items() if k in TRACE_HEADERS}
            await updater.complete(self.say(json.dumps(headers)))
        else:
            if outcome == "slow":
                await asyncio.sleep(2)
            await updater.complete(self.say(await ask_llm(question)))

    def say(self, text: str) -> Any:
        return new_text_message(text)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


def card(name: str, port: int, version: str = "1.0", binding: str = "JSONRPC") -> AgentCard:
    url = f"127.0.0.1:{port}" if binding == "GRPC" else f"http://127.0.0.1:{port}/"
    return AgentCard(
        name=name,
        description=f"the {name} test agent",
        version="1.0",
        capabilities=AgentCapabilities(streaming=True),
        supported_interfaces=[AgentInterface(protocol_binding=binding, protocol_version=version, url=url)],
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="answer", name="answer", description="answers", tags=["test"])],
    )


def build_app(name: str, port: int, *, legacy: bool = False) -> Any:
    """The agent's Starlette app; ``legacy``: the SDK's LegacyRequestHandler, speaking A2A 0.3."""
    from a2a.server.request_handlers import LegacyRequestHandler
    from starlette.applications import Starlette

    agent_card = card(name, port, "0.3" if legacy else "1.0")
    handler_class = LegacyRequestHandler if legacy else DefaultRequestHandler
    handler = handler_class(
        agent_executor=ScriptedAgent(name), task_store=InMemoryTaskStore(), agent_card=agent_card
    )
    routes = create_jsonrpc_routes(handler, "/", enable_v0_3_compat=legacy)
    return Starlette(routes=[*create_agent_card_routes(agent_card), *routes])


def explode_extractors() -> None:
    from reach_otel.instrumentation.a2a import extract

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("extractor exploded")

    for name in ("facts", "request_attributes", "result_attributes", "card_name", "target_name"):
        setattr(extract, name, boom)


def serve(name: str, port: int) -> None:
    import uvicorn

    import reach_otel

    reach_otel.init(service_name=f"{name.lower()}-agent")
    if os.environ.get("A2A_TEST_EXPLODE") == "1":
        explode_extractors()
    legacy = os.environ.get("A2A_TEST_LEGACY") == "1"
    uvicorn.run(build_app(name, port, legacy=legacy), host="127.0.0.1", port=port, log_level="warning")


def serve_grpc(name: str, port: int) -> None:
    """The agent over A2A's gRPC binding (grpc.aio), with no HTTP server at all."""
    import grpc
    from a2a.server.request_handlers import GrpcHandler
    from a2a.types import a2a_pb2_grpc

    import reach_otel

    reach_otel.init(service_name=f"{name.lower()}-agent")
    agent_card = card(name, port, binding="GRPC")
    handler = DefaultRequestHandler(
        agent_executor=ScriptedAgent(name), task_store=InMemoryTaskStore(), agent_card=agent_card
    )

    async def main() -> None:
        server = grpc.aio.server()
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), server)
        server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        await server.wait_for_termination()

    asyncio.run(main())


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1:2] == ["serve-grpc"]:
        serve_grpc(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(__doc__)

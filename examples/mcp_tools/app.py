"""A support agent that uses MCP tools: one server over stdio, one over streamable HTTP; one trace.

    python examples/mcp_tools/app.py                      # prints: TRACE_ID  ANSWER
    reach-otel run -- python examples/mcp_tools/app.py    # the same, with nothing to set up in code

BillingAgent asks the model (the real ``openai`` client, against a local fake LLM) which tool to
use, calls ``lookup_invoice`` on the stdio server, and hands off to RefundAgent, which calls
``refund_status`` on the HTTP server. reach_otel injects the trace into each request's
``params._meta`` and the servers continue it, so the workflow, both agents, the LLM calls, the
handoff and both servers' tool spans are one trace, with the session ids on every span.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from openai import AsyncOpenAI
from opentelemetry import trace

import reach_otel

SERVER = Path(__file__).with_name("server.py")
MODEL = "fake-model"


async def tool_loop(llm: AsyncOpenAI, tools: Client, prompt: str) -> str:
    """Ask the model; run the MCP tools it asks for; give it the results; return its answer."""
    listed = await tools.list_tools()
    specs: list[Any] = [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description or "", "parameters": t.input_schema},
        }
        for t in listed.tools
    ]
    messages: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(4):
        reply = await llm.chat.completions.create(model=MODEL, messages=messages, tools=specs)
        message = reply.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            result = await tools.call_tool(call.function.name, json.loads(call.function.arguments))
            text = "".join(getattr(block, "text", "") for block in result.content)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
    return "no answer"


@reach_otel.agent(name="RefundAgent", role="refunds")
async def refunds(llm: AsyncOpenAI, tools: Client, question: str) -> str:
    return await tool_loop(llm, tools, f"[tool:refund_status] {question}")


@reach_otel.agent(name="BillingAgent", role="billing")
async def billing(llm: AsyncOpenAI, stdio_tools: Client, http_tools: Client, question: str) -> str:
    invoice = await tool_loop(llm, stdio_tools, f"[tool:lookup_invoice] {question}")
    with reach_otel.handoff("BillingAgent", "RefundAgent", reason="refund question", mode="delegate") as h:
        h.transition("accept")
        h.transition("start")
        refund = await refunds(llm, http_tools, question)
        h.transition("commit")
    return f"{invoice} | {refund}"


@reach_otel.workflow(name="support_turn")
async def turn(llm: AsyncOpenAI, http_url: str, question: str) -> str:
    stdio = StdioServerParameters(
        command=sys.executable, args=[str(SERVER)], env={"OTEL_SERVICE_NAME": "support-tools-stdio"}
    )
    with reach_otel.session(session_id="SESS-42", user_id="U-1"):
        async with Client(stdio) as stdio_tools, Client(http_url) as http_tools:
            answer = await billing(llm, stdio_tools, http_tools, question)
    print(f"{format(trace.get_current_span().get_span_context().trace_id, '032x')}  {answer}", flush=True)
    return answer


@contextmanager
def http_tools_server() -> Iterator[str]:
    """The same tools over streamable HTTP, in their own process on a free loopback port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "OTEL_SERVICE_NAME": "support-tools-http"}
    proc = subprocess.Popen([sys.executable, str(SERVER), "--http", str(port)], env=env)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the HTTP tools server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(15)


def main() -> None:
    os.environ.setdefault("OTEL_SERVICE_NAME", "support-agent")
    reach_otel.init()
    with ExitStack() as stack:
        base_url = os.environ.get("OPENAI_BASE_URL")
        if not base_url:
            from reach_otel.testing.fake_llm import FakeLLMServer

            base_url = stack.enter_context(FakeLLMServer()).openai_base_url
        http_url = stack.enter_context(http_tools_server())
        llm = AsyncOpenAI(
            base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY", "offline"), max_retries=0
        )
        asyncio.run(turn(llm, http_url, "Was invoice INV-7 paid, and where is my refund?"))


if __name__ == "__main__":
    main()

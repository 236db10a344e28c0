"""An OpenAI Agents SDK app (triage hands off to billing, which calls a tool), traced by reach_otel.

    python examples/openai_agents/app.py         # prints the trace id; then: reach-otel trace ID

``reach_otel.instrument("openai_agents", "openai")`` adds reach_otel's tracing processor to the SDK
(next to any processors you have) and patches the OpenAI client, so the SDK's agent, generation,
function and handoff spans land in one OpenTelemetry trace. The model is a local fake server.
"""

from __future__ import annotations

import asyncio
import os
from contextlib import ExitStack

import agents
from agents import Agent, Runner, function_tool
from openai import AsyncOpenAI
from opentelemetry import trace

import reach_otel


@function_tool
def lookup_invoice(query: str) -> str:
    """Look up an invoice by its id."""
    return f"invoice {query.split()[-1]}: 42 EUR, paid"


def build() -> Agent:
    billing = Agent(
        name="BillingAgent",
        instructions="Answer billing questions with the invoice tool.",
        model="fake-model",
        tools=[lookup_invoice],
    )
    return Agent(
        name="TriageAgent",
        instructions="Hand billing questions to the billing agent.",
        model="fake-model",
        handoffs=[billing],
    )


async def run(base_url: str) -> str:
    client = AsyncOpenAI(
        base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY", "offline"), max_retries=0
    )
    agents.set_default_openai_client(client, use_for_tracing=False)
    agents.set_default_openai_api("chat_completions")
    try:
        # The fake model follows directives: hand off to billing, then call the invoice tool.
        result = await Runner.run(
            build(), "[tool:transfer_to_billingagent][tool:lookup_invoice] invoice INV-7"
        )
        return str(result.final_output)
    finally:
        await client.close()


@reach_otel.workflow(name="agents_sdk_turn")
def turn(base_url: str) -> str:
    answer = asyncio.run(run(base_url))
    print(f"{format(trace.get_current_span().get_span_context().trace_id, '032x')}  {answer}")
    return answer


def main() -> None:
    # This example runs offline: drop the SDK's default exporter, which would send its traces to
    # OpenAI. reach_otel's processor is *added*; your own processors would stay.
    agents.set_trace_processors([])
    reach_otel.init(service_name="agents-sdk-example")
    reach_otel.instrument("openai_agents", "openai")
    with ExitStack() as stack:
        base_url = os.environ.get("OPENAI_BASE_URL")
        if not base_url:
            from reach_otel.testing.fake_llm import FakeLLMServer

            base_url = stack.enter_context(FakeLLMServer()).openai_base_url
        turn(base_url)
    reach_otel.shutdown()


if __name__ == "__main__":
    main()

"""An ordinary async multi-agent support desk — no reach_otel import anywhere.

Run it instrumented, configured only by the environment (see README.md in this folder):

    reach-otel run -- python examples/zero_code/app.py
"""

from __future__ import annotations

import asyncio
import os

from openai import AsyncOpenAI
from orchestrator import Orchestrator
from support_agents import Agent
from support_tools import (
    lookup_invoice,
    reset_router,
    transfer_to_billing,
    transfer_to_tech_support,
    transfer_to_triage,
)

MODEL = os.environ.get("SUPPORT_MODEL", "fake-model")

# Each turn scripts what the (fake, deterministic) model does for each agent: the [tool:NAME]
# directives make it call that tool.
TURNS = [
    {
        "TriageAgent": "[tool:transfer_to_billing] where is my invoice",
        "BillingAgent": "[tool:lookup_invoice] INV-1",
    },
    {
        "TriageAgent": "[tool:transfer_to_tech_support] router down",
        "TechSupportAgent": "[tool:reset_router] help",
    },
    {"TriageAgent": "hello there"},
    # A ping-pong: triage and billing keep handing the customer to each other.
    {
        "TriageAgent": "[tool:transfer_to_billing] refund",
        "BillingAgent": "[tool:transfer_to_triage] not mine",
    },
]


def build(client: AsyncOpenAI) -> Orchestrator:
    agents = {
        "TriageAgent": Agent(
            "TriageAgent", "Route the customer.", [transfer_to_billing, transfer_to_tech_support], MODEL
        ),
        "BillingAgent": Agent(
            "BillingAgent", "Answer billing questions.", [lookup_invoice, transfer_to_triage], MODEL
        ),
        "TechSupportAgent": Agent("TechSupportAgent", "Fix technical problems.", [reset_router], MODEL),
    }
    return Orchestrator(client, agents, first="TriageAgent")


async def main() -> None:
    client = AsyncOpenAI(api_key=os.environ.get("OPENAI_API_KEY", "not-needed"), max_retries=0)
    orchestrator = build(client)
    for turn in TURNS:
        print(await orchestrator.execute_turn(turn))


if __name__ == "__main__":
    asyncio.run(main())

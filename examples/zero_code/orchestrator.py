"""Routes one customer turn between agents; a HandoffSignal switches the active agent."""

from __future__ import annotations

from openai import AsyncOpenAI
from support_agents import Agent, HandoffSignal


class Orchestrator:
    def __init__(
        self, client: AsyncOpenAI, agents: dict[str, Agent], first: str, max_switches: int = 6
    ) -> None:
        self.client = client
        self.agents = agents
        self.first = first
        self.max_switches = max_switches

    async def execute_turn(self, script: dict[str, str]) -> str:
        agent = self.agents[self.first]
        for _ in range(self.max_switches + 1):
            try:
                return await agent.run(self.client, script)
            except HandoffSignal as signal:
                agent = self.agents[signal.target_agent_name]
        return "sorry, we are going round in circles"

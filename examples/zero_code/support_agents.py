"""A minimal agent loop over the OpenAI chat API: call the model, run the tools it asks for."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from openai import AsyncOpenAI


class HandoffSignal(Exception):
    """Raised by a transfer tool: the orchestrator switches to ``target_agent_name``."""

    def __init__(self, target_agent_name: str) -> None:
        super().__init__(f"transfer to {target_agent_name}")
        self.target_agent_name = target_agent_name


def _schema(fn: Callable[..., Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": fn.__name__,
            "description": (fn.__doc__ or "").strip(),
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        },
    }


class Agent:
    def __init__(self, name: str, instructions: str, tools: list[Callable[..., str]], model: str) -> None:
        self.name = name
        self.instructions = instructions
        self.tools = {t.__name__: t for t in tools}
        self.model = model

    async def run(self, client: AsyncOpenAI, script: dict[str, str], max_steps: int = 4) -> str:
        """Answer this agent's part of the script; tool calls may raise HandoffSignal."""
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": self.instructions},
            {"role": "user", "content": script.get(self.name, script.get("*", ""))},
        ]
        for _ in range(max_steps):
            reply = await client.chat.completions.create(
                model=self.model, messages=messages, tools=[_schema(t) for t in self.tools.values()]
            )
            message = reply.choices[0].message
            if not message.tool_calls:
                return message.content or ""
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                args = json.loads(call.function.arguments or "{}")
                result = self.tools[call.function.name](**args)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        return "gave up: too many steps"

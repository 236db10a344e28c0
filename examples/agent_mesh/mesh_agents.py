"""Three agents as HTTP services speaking the /invoke protocol — no reach_otel import anywhere.

``gateway`` answers a user's request by calling ``data`` (rows for the query) and then ``content``
(an LLM writes the answer from the rows). Peers are found through DATA_URL / CONTENT_URL.
"""

from __future__ import annotations

import os
import time
import uuid
from typing import Any

import httpx
from fastapi import FastAPI
from openai import AsyncOpenAI

ROWS = {"revenue": [("2026-10", 120_000), ("2026-11", 135_500)], "churn": [("2026-10", 0.031)]}


def invoke_body(
    agent_id: str, capability: str, params: dict[str, Any], context: dict[str, Any]
) -> dict[str, Any]:
    return {
        "request_id": uuid.uuid4().hex,
        "invoke_mode": "sync",
        "target": {"agent_id": agent_id, "capability": capability},
        "params": params,
        "context": {"tenant_id": context.get("tenant_id", "demo"), "timeout_ms": 10_000},
        "callback": None,
    }


class MeshAgent:
    def __init__(self, name: str) -> None:
        self.name = name

    async def handle(self, body: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError


class DataAgent(MeshAgent):
    async def handle(self, body: dict[str, Any]) -> dict[str, Any]:
        topic = str(body.get("params", {}).get("topic", "revenue"))
        return {"rows": ROWS.get(topic, []), "seen_trace_id": body.get("context", {}).get("trace_id")}


class ContentAgent(MeshAgent):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.llm = AsyncOpenAI(api_key=os.environ.get("OPENAI_API_KEY", "not-needed"), max_retries=0)

    async def handle(self, body: dict[str, Any]) -> dict[str, Any]:
        rows = body.get("params", {}).get("rows", [])
        reply = await self.llm.chat.completions.create(
            model=os.environ.get("CONTENT_MODEL", "fake-model"),
            messages=[{"role": "user", "content": f"summarise {len(rows)} rows: {rows}"}],
        )
        return {
            "text": reply.choices[0].message.content,
            "seen_trace_id": body.get("context", {}).get("trace_id"),
        }


class GatewayAgent(MeshAgent):
    async def handle(self, body: dict[str, Any]) -> dict[str, Any]:
        params = body.get("params", {})
        context = body.get("context", {})
        async with httpx.AsyncClient(timeout=10) as client:
            data = await client.post(
                os.environ["DATA_URL"] + "/invoke", json=invoke_body("data", "query", params, context)
            )
            rows = data.json()["output"]["rows"]
            content = await client.post(
                os.environ["CONTENT_URL"] + "/invoke",
                json=invoke_body("content", "write", {"rows": rows}, context),
            )
        return {
            "answer": content.json()["output"]["text"],
            "hops": [data.json()["output"], content.json()["output"]],
        }


AGENTS = {
    "gateway": GatewayAgent("GatewayAgent"),
    "data": DataAgent("DataAgent"),
    "content": ContentAgent("ContentAgent"),
}


def create_app(role: str) -> FastAPI:
    agent = AGENTS[role]
    app = FastAPI(title=f"{agent.name} service")

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok", "agent": agent.name}

    @app.post("/invoke")
    async def invoke(body: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        output = await agent.handle(body)
        return {
            "request_id": body.get("request_id"),
            "status": "ok",
            "elapsed_ms": round((time.perf_counter() - started) * 1000, 3),
            "output": output,
            "warnings": [],
        }

    return app

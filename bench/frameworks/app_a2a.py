"""The A2A app measured: one agent sending a message to another agent's a2a-sdk server (another
process, HTTP on 127.0.0.1), which completes a task.

One request is one ``message/send`` on a client made once (the unit: an A2A call); the server's
CPU time is charged to it. A probe sends one message inside an app agent span and reads, from the
task's text, the trace headers the server received, and from the server, its spans' trace ids.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import httpx
from opentelemetry import trace

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests" / "instrumentation"))
import a2a_agents  # noqa: E402
from a2a.client import ClientConfig, create_client  # noqa: E402
from a2a.helpers import new_text_message  # noqa: E402
from a2a.types.a2a_pb2 import Role, SendMessageRequest  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class App:
    agents: ClassVar[list[str]] = ["caller", "billing"]

    def __init__(self, tracer: str) -> None:
        self.tracer = tracer
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "BENCH_TRACER": tracer}
        self.server = subprocess.Popen([sys.executable, str(HERE / "a2a_server.py"), str(port)], env=env)
        self.http = httpx.Client(base_url=self.url, timeout=30)
        deadline = time.monotonic() + 60
        while True:
            try:
                self.http.get("/bench/cpu")
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or self.server.poll() is not None:
                    raise
                time.sleep(0.1)
        self.loop = asyncio.new_event_loop()
        self.client = self.loop.run_until_complete(create_client(self.url, ClientConfig(streaming=False)))

    async def _send(self, text: str) -> a2a_agents.Reply:
        reply = a2a_agents.Reply()
        message = new_text_message(text, role=Role.ROLE_USER)
        async for event in self.client.send_message(SendMessageRequest(message=message)):
            a2a_agents._record(reply, event)
        return reply

    def run(self, runs: int) -> None:
        async def sends() -> None:
            for _ in range(runs):
                await self._send("outcome=headers how much?")

        self.loop.run_until_complete(sends())

    def request(self) -> None:
        self.run(1)

    def units(self) -> dict[str, float]:
        return {"A2A call": 1.0}

    def callers(self, system_prompts: list[str]) -> list[str] | None:
        return None

    def extra_cpu(self) -> float:
        return float(self.http.get("/bench/cpu").json()["cpu_s"])

    def probe_extra(self, capture: Any, flush: Callable[[], None]) -> dict[str, Any]:
        self.http.get("/bench/keep")

        async def probe() -> tuple[str, a2a_agents.Reply]:
            with trace.get_tracer("bench.app").start_as_current_span("invoke_agent caller") as span:
                reply = await self._send("outcome=headers how much?")
                return format(span.get_span_context().trace_id, "032x"), reply

        client_trace, reply = self.loop.run_until_complete(probe())
        seen = self.http.get("/bench/take").json()
        headers = json.loads(reply.text) if reply.text.startswith("{") else {}
        return {
            "task_state": reply.state,
            "headers_received": sorted(headers),
            "server_spans": [s["name"] for s in seen["spans"]],
            "server_instrument_error": seen["instrument_error"],
            "one_trace": self.tracer != "none" and any(s["trace_id"] == client_trace for s in seen["spans"]),
            "traceparent_carries_trace": client_trace in headers.get("traceparent", ""),
        }

    def close(self) -> None:
        self.loop.run_until_complete(self.client.close())
        self.server.terminate()
        try:
            self.server.wait(20)
        except subprocess.TimeoutExpired:
            self.server.kill()
            self.server.wait(5)

"""The MCP app measured: a client calling a tool of a server in another process, over stdio.

One request is one ``tools/call`` of ``add`` on a session opened once (the unit: a tool call). The
server (:mod:`mcp_server`) runs under the same tracer, and its CPU time is charged to the call. A
probe makes one call inside an app span and asks the server for its spans, to see whether one
trace crosses the process boundary. Works on the MCP SDK 2.x and 1.x.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, ClassVar

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from opentelemetry import trace

HERE = Path(__file__).resolve().parent


def _value(result: Any) -> Any:
    """A tool result's value, read the same way on both SDK majors (structured content, else text)."""
    structured = getattr(result, "structured_content", None) or getattr(result, "structuredContent", None)
    if structured is not None:
        return structured.get("result", structured)
    return json.loads(result.content[0].text)


class App:
    agents: ClassVar[list[str]] = ["caller"]

    def __init__(self, tracer: str) -> None:
        self.tracer = tracer
        self.loop = asyncio.new_event_loop()
        # Jobs for the session's task; a None job ends it.
        self.inbox: (
            asyncio.Queue[tuple[Callable[[ClientSession], Any] | None, asyncio.Future[Any]]] | None
        ) = None
        ready: asyncio.Future[None] = self.loop.create_future()
        self.owner = self.loop.create_task(self._own(ready))
        self.loop.run_until_complete(ready)

    async def _own(self, ready: asyncio.Future[None]) -> None:
        """Holds the session for the app's life: the transport's task group stays in one task."""
        self.inbox = asyncio.Queue()
        env = {**os.environ, "BENCH_TRACER": self.tracer}
        params = StdioServerParameters(command=sys.executable, args=[str(HERE / "mcp_server.py")], env=env)
        async with AsyncExitStack() as stack:
            read, write = await stack.enter_async_context(stdio_client(params))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            ready.set_result(None)
            while True:
                job, done = await self.inbox.get()
                if job is None:
                    done.set_result(None)
                    return
                try:
                    done.set_result(await job(session))
                except Exception as exc:
                    done.set_exception(exc)

    def _do(self, job: Callable[[ClientSession], Any]) -> Any:
        async def ask() -> Any:
            done: asyncio.Future[Any] = self.loop.create_future()
            assert self.inbox is not None
            await self.inbox.put((job, done))
            return await done

        return self.loop.run_until_complete(ask())

    def run(self, runs: int) -> None:
        async def calls(session: ClientSession) -> None:
            for i in range(runs):
                await session.call_tool("add", {"a": i, "b": 1})

        self._do(calls)

    def request(self) -> None:
        self.run(1)

    def units(self) -> dict[str, float]:
        return {"tool call": 1.0}

    def callers(self, system_prompts: list[str]) -> list[str] | None:
        return None

    def extra_cpu(self) -> float:
        async def cpu(session: ClientSession) -> float:
            return float(_value(await session.call_tool("cpu", {})))

        return float(self._do(cpu))

    def probe_extra(self, capture: Any, flush: Callable[[], None]) -> dict[str, Any]:
        """One call under an app span: the trace ids on both sides of the boundary."""

        async def probe(session: ClientSession) -> dict[str, Any]:
            await session.call_tool("keep", {})
            with trace.get_tracer("bench.app").start_as_current_span("invoke_agent caller") as span:
                await session.call_tool("add", {"a": 2, "b": 3})
                client_trace = format(span.get_span_context().trace_id, "032x")
            return {"client_trace": client_trace, **_value(await session.call_tool("take", {}))}

        flush()
        if capture is not None:
            capture.keep()
        seen = self._do(probe)
        flush()
        client = capture.take() if capture is not None else []
        joined = [s for s in seen["spans"] if s["trace_id"] == seen["client_trace"]]
        return {
            "server_spans": [s["name"] for s in seen["spans"]],
            "server_spans_in_client_trace": [s["name"] for s in joined],
            "server_instrument_error": seen["instrument_error"],
            "one_trace": self.tracer != "none" and bool(joined),
            "client_spans": [s["name"] for s in client],
        }

    def close(self) -> None:
        self._do_close()

    def _do_close(self) -> None:
        async def stop() -> None:
            done: asyncio.Future[None] = self.loop.create_future()
            assert self.inbox is not None
            await self.inbox.put((None, done))
            await done
            await self.owner

        self.loop.run_until_complete(stop())

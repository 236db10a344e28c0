"""Outgoing httpx/requests and incoming FastAPI: one trace across a real HTTP hop on loopback."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
import requests
from fastapi import FastAPI, Request
from opentelemetry import trace
from opentelemetry.trace import SpanKind, format_trace_id
from servers import ServerThread

import reach_otel
from reach_otel.instrumentation.httpx import HTTPXInstrumentor
from reach_otel.instrumentation.requests import RequestsInstrumentor
from reach_otel.instrumentation.starlette import StarletteInstrumentor
from reach_otel.instrumentation.threading import ThreadingInstrumentor


@reach_otel.agent(name="DataAgent")
def data_agent(params: dict[str, Any]) -> dict[str, Any]:
    return {"rows": len(params)}


def make_app() -> FastAPI:
    app = FastAPI()

    @app.post("/invoke")
    async def invoke(request: Request) -> dict[str, Any]:
        body = await request.json()
        seen = format_trace_id(trace.get_current_span().get_span_context().trace_id)
        return {
            "request_id": body.get("request_id"),
            "status": "ok",
            "output": data_agent(body.get("params", {})),
            "seen_trace_id": seen,
            "body_trace_id": (body.get("context") or {}).get("trace_id"),
        }

    return app


@pytest.fixture
def server(rec) -> Iterator[ServerThread]:
    instrumentors = [HTTPXInstrumentor(), RequestsInstrumentor(), StarletteInstrumentor()]
    for instrumentor in instrumentors:
        instrumentor.instrument()
    try:
        with ServerThread(make_app()) as srv:
            yield srv
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()


def body() -> dict[str, Any]:
    return {
        "request_id": "r1",
        "invoke_mode": "sync",
        "target": {"agent_id": "data", "capability": "query"},
        "params": {"a": 1, "b": 2},
        "context": {"tenant_id": "t1", "timeout_ms": 10000},
    }


def check_one_trace(rec, reply: dict[str, Any]) -> None:
    server_span = rec.wait_one("POST /invoke")
    client_span = next(s for s in rec.spans if s.kind == SpanKind.CLIENT and s.name == "POST")
    agent_span = rec.one("invoke_agent DataAgent")
    trace_id = format_trace_id(client_span.context.trace_id)
    assert reply["seen_trace_id"] == trace_id
    assert reply["body_trace_id"] == trace_id
    assert server_span.kind == SpanKind.SERVER
    assert server_span.parent.span_id == client_span.context.span_id
    assert agent_span.parent.span_id == server_span.context.span_id
    assert agent_span.attributes["reach.hop.count"] == 1  # carried in baggage
    assert client_span.attributes["http.response.status_code"] == 200
    assert server_span.attributes["http.response.status_code"] == 200
    assert client_span.attributes["server.port"] > 0


def gateway(send: Any) -> dict[str, Any]:
    @reach_otel.agent(name="Gateway")
    def run() -> dict[str, Any]:
        with reach_otel.handoff("Gateway", "DataAgent", mode="delegate"):
            return send()

    return run()


def test_httpx_sync(rec, server) -> None:
    reply = gateway(lambda: httpx.post(server.url + "/invoke", json=body(), timeout=10).json())
    assert reply["output"] == {"rows": 2}
    check_one_trace(rec, reply)


def test_httpx_async(rec, server) -> None:
    async def send() -> dict[str, Any]:
        async with httpx.AsyncClient() as client:
            return (await client.post(server.url + "/invoke", json=body(), timeout=10)).json()

    @reach_otel.agent(name="Gateway")
    async def run() -> dict[str, Any]:
        with reach_otel.handoff("Gateway", "DataAgent"):
            return await send()

    check_one_trace(rec, asyncio.run(run()))


def test_requests(rec, server) -> None:
    reply = gateway(lambda: requests.post(server.url + "/invoke", json=body(), timeout=10).json())
    check_one_trace(rec, reply)


def test_body_context_alone_continues_the_trace(rec, server) -> None:
    """A caller that sends only the /invoke body's context.trace_id (no headers) is continued."""
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    payload = body()
    payload["context"]["trace_id"] = trace_id
    req = urllib.request.Request(
        server.url + "/invoke", json.dumps(payload).encode(), {"content-type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        reply = json.loads(resp.read())
    assert reply["seen_trace_id"] == trace_id
    assert format_trace_id(rec.wait_one("POST /invoke").context.trace_id) == trace_id
    assert format_trace_id(rec.one("invoke_agent DataAgent").context.trace_id) == trace_id


def test_non_invoke_bodies_are_sent_untouched(rec, server) -> None:
    reply = httpx.post(server.url + "/invoke", json={"params": {}, "note": "plain"}, timeout=10).json()
    assert reply["body_trace_id"] is None  # not an /invoke body: nothing written into it


def test_suppressed_calls_get_no_span_and_no_headers(rec, server) -> None:
    from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, attach, detach, set_value

    token = attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
    try:
        reply = httpx.post(server.url + "/invoke", json=body(), timeout=10).json()
    finally:
        detach(token)
    assert reply["body_trace_id"] is None
    assert [s for s in rec.spans if s.kind == SpanKind.CLIENT] == []


def test_threads_carry_the_context(rec) -> None:
    instrumentor = ThreadingInstrumentor()
    instrumentor.instrument()

    @reach_otel.tool
    def lookup(i: int) -> int:
        return i

    class Worker(__import__("threading").Thread):
        def run(self) -> None:  # an override: still runs in the starter's context
            lookup(99)

    @reach_otel.agent(name="Fanout")
    def fanout() -> list[int]:
        with ThreadPoolExecutor(max_workers=2) as pool:
            results = [*pool.map(lookup, range(3)), pool.submit(lookup, 3).result()]
        worker = Worker()
        worker.start()
        worker.join()
        return results

    try:
        assert fanout() == [0, 1, 2, 3]
    finally:
        instrumentor.uninstrument()
    agent_span = rec.one("invoke_agent Fanout")
    tools = rec.named("execute_tool lookup")
    assert len(tools) == 5
    assert all(t.parent.span_id == agent_span.context.span_id for t in tools)

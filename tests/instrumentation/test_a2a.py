"""A2A instrumentation against the real ``a2a-sdk``: agents as uvicorn servers in their own processes.

Four agent servers (``a2a_agents.py serve``: Triage, Billing, Plain — without the HTTP
instrumentations — and Broken, whose extractors explode) run under ``reach_otel.init()`` and export
to one OTLP sink; their LLM is the fake server, called through the real ``openai`` client. The
caller is this process: an agent span (``Desk``) whose A2A client is instrumented in-process, its
spans in a per-test recorder. The example under ``reach-otel run`` goes to a real collector.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import httpx
import pytest
from a2a.client.errors import A2AClientTimeoutError
from a2a.types import a2a_pb2
from a2a.types.a2a_pb2 import AgentCard
from a2a.utils.errors import InternalError
from collector_process import CollectorProcess, free_port
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import SpanKind, StatusCode
from otlp_sink import OtlpSink, _value
from wrapt import FunctionWrapper

import reach_otel
from reach_otel import handoff_state as hf
from reach_otel import instrumentation
from reach_otel.config import load_settings
from reach_otel.errors import HopLimitExceeded
from reach_otel.handler import TelemetryHandler, set_handler
from reach_otel.instrumentation.a2a import A2AInstrumentor, extract, sdk, states
from reach_otel.instrumentation.httpx import HTTPXInstrumentor
from reach_otel.testing.fake_llm import FakeLLMServer

if TYPE_CHECKING:  # the root conftest's class; a bare `conftest` import is ambiguous in the suite
    from tests.conftest import Recorder

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import a2a_agents  # noqa: E402

EXAMPLE = HERE.parents[1] / "examples" / "a2a_mesh"
AGENTS = {"triage": "Triage", "billing": "Billing", "plain": "Plain", "broken": "Broken", "legacy": "Legacy"}
KINDS = {1: "INTERNAL", 2: "SERVER", 3: "CLIENT"}
SDK_SCOPE = "a2a-python-sdk"


# -- the agents' processes and what they export ---------------------------------------------------
@dataclass
class Mesh:
    sink: OtlpSink
    urls: dict[str, str]
    grpc_port: int  # the Ledger agent, over A2A's gRPC binding only


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_", "_REACH_", "A2A_"))}
    env.update(extra)
    return env


def wait_card(url: str, proc: subprocess.Popen[Any], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"agent at {url} exited with {proc.returncode}")
        try:
            if httpx.get(url + "/.well-known/agent-card.json", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"agent at {url} did not start")


def wait_port(port: int, proc: subprocess.Popen[Any], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"agent on port {port} exited with {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.1)
    raise RuntimeError(f"agent on port {port} did not start")


@pytest.fixture(scope="module")
def mesh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mesh]:
    logs = tmp_path_factory.mktemp("a2a-agents")
    with OtlpSink() as sink, FakeLLMServer() as llm:
        urls = {key: f"http://127.0.0.1:{free_port()}" for key in AGENTS}
        base = clean_env(
            OTEL_EXPORTER_OTLP_ENDPOINT=sink.url,
            OTEL_BSP_SCHEDULE_DELAY="100",
            OPENAI_BASE_URL=llm.openai_base_url,
            OPENAI_API_KEY="test",
            A2A_PEERS=",".join(f"{key}={url}" for key, url in urls.items()),
        )
        extra = {
            "plain": {"OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "httpx,starlette"},
            "broken": {"A2A_TEST_EXPLODE": "1"},
            "legacy": {"A2A_TEST_LEGACY": "1"},
        }
        procs: dict[str, subprocess.Popen[bytes]] = {}
        try:
            for key, name in AGENTS.items():
                port = urls[key].rsplit(":", 1)[1]
                with open(logs / f"{key}.log", "wb") as log:
                    procs[key] = subprocess.Popen(
                        [sys.executable, str(HERE / "a2a_agents.py"), "serve", name, port],
                        cwd=HERE,
                        env={**base, **extra.get(key, {})},
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    )
            grpc_port = free_port()
            with open(logs / "grpc.log", "wb") as log:
                procs["grpc"] = subprocess.Popen(
                    [sys.executable, str(HERE / "a2a_agents.py"), "serve-grpc", "Ledger", str(grpc_port)],
                    cwd=HERE,
                    env=base,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            for key in AGENTS:
                wait_card(urls[key], procs[key])
            wait_port(grpc_port, procs["grpc"])
            yield Mesh(sink, urls, grpc_port)
        finally:
            for proc in procs.values():
                proc.terminate()
            for proc in procs.values():
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()


def exported(sink: OtlpSink) -> list[dict[str, Any]]:
    """Every span the sink got: name, service, scope, kind, status, ids, attributes, events."""
    out = []
    for req in list(sink.requests):
        request: ExportTraceServiceRequest = req["request"]
        for rs in request.resource_spans:
            resource = {kv.key: _value(kv.value) for kv in rs.resource.attributes}
            for ss in rs.scope_spans:
                for span in ss.spans:
                    out.append(
                        {
                            "name": span.name,
                            "service": resource.get("service.name"),
                            "scope": ss.scope.name,
                            "kind": KINDS.get(span.kind, str(span.kind)),
                            "error": span.status.code == 2,
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent": span.parent_span_id.hex() or None,
                            "attributes": {kv.key: _value(kv.value) for kv in span.attributes},
                            "events": [
                                (e.name, {kv.key: _value(kv.value) for kv in e.attributes})
                                for e in span.events
                            ],
                        }
                    )
    return out


def trace_spans(
    sink: OtlpSink, trace_id: str, ready: Callable[[list[dict[str, Any]]], bool], timeout: float = 20
) -> list[dict[str, Any]]:
    """The sink's spans of one trace, once ``ready`` says all expected ones are in (then a moment more)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        spans = [s for s in exported(sink) if s["trace_id"] == trace_id]
        if ready(spans):
            time.sleep(0.4)  # whatever else this trace had is exported by now (100 ms batches)
            return [s for s in exported(sink) if s["trace_id"] == trace_id]
        time.sleep(0.05)
    raise AssertionError(
        f"trace incomplete: {sorted(s['name'] for s in exported(sink) if s['trace_id'] == trace_id)}"
    )


def has(*names: str) -> Callable[[list[dict[str, Any]]], bool]:
    def ready(spans: list[dict[str, Any]]) -> bool:
        seen = [s["name"] for s in spans]
        return all(seen.count(n) >= names.count(n) for n in names)

    return ready


def named(spans: list[dict[str, Any]], name: str, service: str | None = None) -> list[dict[str, Any]]:
    return [s for s in spans if s["name"] == name and (service is None or s["service"] == service)]


def one(spans: list[dict[str, Any]], name: str, service: str | None = None) -> dict[str, Any]:
    found = named(spans, name, service)
    assert len(found) == 1, (
        f"expected one {name!r} of {service}, got {[(s['name'], s['service']) for s in spans]}"
    )
    return found[0]


def transitions(events: Any) -> list[str]:
    """The handoff events applied, in order (from a ReadableSpan's events or an exported span's)."""
    pairs = [(e.name, dict(e.attributes or {})) for e in events] if not isinstance(events, list) else events
    return [attrs["reach.handoff.event"] for name, attrs in pairs if name == "reach.handoff.transition"]


# -- the caller: this process, an agent span around the A2A client -----------------------------
@pytest.fixture
def caller(rec: Recorder) -> Iterator[Recorder]:
    instrumentor = A2AInstrumentor()
    instrumentor.instrument()
    yield rec
    instrumentor.uninstrument()


def ask(
    url: str | AgentCard, text: str, *, stream: bool = False, timeout: float | None = None
) -> a2a_agents.Reply:
    @reach_otel.agent(name="Desk")
    async def desk() -> a2a_agents.Reply:
        return await a2a_agents.send(url, text, stream=stream, timeout=timeout)

    return asyncio.run(desk())


def hex_trace(span: ReadableSpan) -> str:
    return f"{span.context.trace_id:032x}"


def hex_span(span: ReadableSpan) -> str:
    return f"{span.context.span_id:016x}"


# -- across processes -------------------------------------------------------------------------------
@pytest.mark.parametrize("stream", [False, True], ids=["send", "stream"])
def test_one_trace_across_two_agent_processes(mesh: Mesh, caller: Recorder, stream: bool) -> None:
    method = "message/stream" if stream else "message/send"
    via = "stream" if stream else "send"
    reply = ask(mesh.urls["triage"], f"route=billing via={via} what is my balance", stream=stream)
    assert reply.state == "completed"
    assert reply.text == "Triage < completed: echo: what is my balance"

    desk = caller.one("invoke_agent Desk")
    handoff = caller.one("handoff Triage")
    client = caller.one(method)
    assert handoff.parent is not None and handoff.parent.span_id == desk.context.span_id
    assert client.parent is not None and client.parent.span_id == handoff.context.span_id
    assert client.kind == SpanKind.CLIENT
    assert handoff.attributes["reach.handoff.source"] == "Desk"
    assert handoff.attributes["reach.handoff.mode"] == "delegate"
    assert handoff.attributes["reach.hop.count"] == 1
    assert handoff.attributes["reach.handoff.status"] == "committed"
    assert handoff.attributes["reach.task.id"] == reply.task_id
    assert transitions(handoff.events) == ["accept", "start", "commit"]
    assert handoff.attributes["reach.handoff.idempotency_key"] == client.attributes["a2a.message.id"]
    assert client.attributes["a2a.method.name"] == method
    assert client.attributes["a2a.agent.name"] == "Triage"
    assert client.attributes["a2a.task.id"] == reply.task_id
    assert client.attributes["a2a.task.state"] == "completed"
    assert client.attributes["gen_ai.conversation.id"] == reply.context_id
    assert client.attributes["server.port"] == int(mesh.urls["triage"].rsplit(":", 1)[1])
    assert client.attributes["reach.agent.name"] == "Desk"

    trace_id = hex_trace(desk)
    spans = trace_spans(
        mesh.sink, trace_id, has(method, method, method, "chat fake-model", "invoke_agent Billing")
    )
    assert {s["service"] for s in spans} == {"triage-agent", "billing-agent"}
    servers = [s for s in named(spans, method) if s["kind"] == "SERVER"]
    assert len(servers) == 2  # one SERVER span per A2A request: the HTTP server span, taken over
    triage_server = next(s for s in servers if s["service"] == "triage-agent")
    billing_server = next(s for s in servers if s["service"] == "billing-agent")
    assert triage_server["parent"] == hex_span(client)  # continued from this process's CLIENT span
    assert triage_server["attributes"]["a2a.task.id"] == reply.task_id
    assert triage_server["attributes"]["gen_ai.conversation.id"] == reply.context_id
    assert triage_server["attributes"]["a2a.agent.name"] == "Triage"
    assert triage_server["attributes"]["a2a.task.state"] == "completed"
    assert triage_server["attributes"]["rpc.system"] == "jsonrpc"
    assert triage_server["attributes"]["rpc.method"] == ("SendStreamingMessage" if stream else "SendMessage")

    triage = one(spans, "invoke_agent Triage")
    assert triage["parent"] == triage_server["span_id"]
    assert triage["attributes"]["reach.hop.count"] == 1
    assert triage["attributes"]["gen_ai.conversation.id"] == reply.context_id  # no session: the contextId
    onward = one(spans, "handoff Billing")
    assert onward["parent"] == triage["span_id"]
    assert onward["attributes"]["reach.hop.count"] == 2
    assert onward["attributes"]["reach.handoff.status"] == "committed"
    assert transitions(onward["events"]) == ["accept", "start", "commit"]
    triage_client = next(s for s in named(spans, method, "triage-agent") if s["kind"] == "CLIENT")
    assert triage_client["parent"] == onward["span_id"]
    assert billing_server["parent"] == triage_client["span_id"]
    # Billing's own A2A context, which the client learned from the answer:
    assert (
        billing_server["attributes"]["gen_ai.conversation.id"]
        == triage_client["attributes"]["gen_ai.conversation.id"]
    )
    billing = one(spans, "invoke_agent Billing")
    assert billing["parent"] == billing_server["span_id"]
    assert billing["attributes"]["reach.hop.count"] == 2
    assert billing["attributes"]["gen_ai.conversation.id"] == reply.context_id  # the session, from baggage
    assert one(spans, "chat fake-model")["parent"] == billing["span_id"]

    assert not [s for s in spans if s["scope"] == SDK_SCOPE]  # the SDK's own spans gave way to ours
    assert not [s for s in spans if s["name"].startswith("POST")]  # no HTTP span beside the A2A ones
    assert not [s for s in caller.spans if s.name.startswith(("a2a.", "POST"))]


@pytest.mark.parametrize("grpc", [False, True], ids=["jsonrpc", "grpc"])
@pytest.mark.parametrize("stream", [False, True], ids=["send", "stream"])
def test_the_executor_s_first_line_runs_in_the_request_s_trace(
    mesh: Mesh, caller: Recorder, stream: bool, grpc: bool
) -> None:
    """Whatever the executor does before it publishes anything (here an HTTP call of its own, on its
    very first line) is under its agent span, in the caller's trace: never a root of its own."""
    name, service = ("Ledger", "ledger-agent") if grpc else ("Triage", "triage-agent")
    target = a2a_agents.card("Ledger", mesh.grpc_port, binding="GRPC") if grpc else mesh.urls["triage"]
    reply = ask(target, "first=fetch what is my balance", stream=stream)
    assert reply.state == "completed"
    trace_id = hex_trace(caller.one("invoke_agent Desk"))
    spans = trace_spans(mesh.sink, trace_id, has(f"invoke_agent {name}", "GET", "chat fake-model"))
    agent = one(spans, f"invoke_agent {name}")
    fetch = one(spans, "GET", service)
    assert fetch["kind"] == "CLIENT"
    assert fetch["parent"] == agent["span_id"]
    assert one(spans, "chat fake-model")["parent"] == agent["span_id"]
    strays = [s["name"] for s in exported(mesh.sink) if s["service"] == service and s["parent"] is None]
    assert "GET" not in strays  # the call made no trace of its own


@pytest.mark.parametrize("stream", [False, True], ids=["send", "stream"])
def test_one_trace_across_a2a_over_grpc(mesh: Mesh, caller: Recorder, stream: bool) -> None:
    """The gRPC binding: the client's transport sends our trace headers as request metadata, and
    the server continues them from there (it has no HTTP headers) — hop state and all."""
    method = "message/stream" if stream else "message/send"
    ledger = a2a_agents.card("Ledger", mesh.grpc_port, binding="GRPC")
    reply = ask(ledger, "what is my balance", stream=stream)
    assert (reply.state, reply.text) == ("completed", "echo: what is my balance")

    handoff = caller.one("handoff Ledger")
    client = caller.one(method)
    assert client.kind == SpanKind.CLIENT and client.parent is not None
    assert client.parent.span_id == handoff.context.span_id
    assert handoff.attributes["reach.handoff.status"] == "committed"
    spans = trace_spans(mesh.sink, hex_trace(client), has(method, "invoke_agent Ledger", "chat fake-model"))
    server = one(spans, method, "ledger-agent")
    assert server["kind"] == "SERVER" and server["parent"] == hex_span(client)
    assert server["attributes"]["rpc.system"] == "grpc"
    assert server["attributes"]["a2a.task.id"] == reply.task_id
    agent = one(spans, "invoke_agent Ledger")
    assert agent["parent"] == server["span_id"]
    assert agent["attributes"]["reach.hop.count"] == 1  # the hop state came in the baggage
    assert one(spans, "chat fake-model")["parent"] == agent["span_id"]


def test_a_ping_pong_across_agents_is_a_loop(mesh: Mesh, caller: Recorder) -> None:
    reply = ask(mesh.urls["triage"], "route=billing,triage,billing settle the invoice")
    assert reply.state == "completed"
    assert reply.text == (
        "Triage < completed: Billing < completed: Triage < completed: echo: settle the invoice"
    )
    first = caller.one("handoff Triage")
    assert first.attributes["reach.hop.count"] == 1
    assert first.attributes["reach.loop.detected"] is False
    trace_id = hex_trace(first)
    spans = trace_spans(
        mesh.sink,
        trace_id,
        has(
            "handoff Billing",
            "handoff Billing",
            "handoff Triage",
            "invoke_agent Billing",
            "invoke_agent Billing",
        ),
    )
    hops = sorted(
        (s["attributes"]["reach.hop.count"], s["service"], s["name"], s["attributes"]["reach.loop.detected"])
        for s in spans
        if s["name"].startswith("handoff")
    )
    assert hops == [
        (2, "triage-agent", "handoff Billing", False),
        (3, "billing-agent", "handoff Triage", False),
        (4, "triage-agent", "handoff Billing", True),  # Triage, Billing, Triage, Billing
    ]
    looped = next(s for s in spans if s["attributes"].get("reach.loop.detected") is True)
    loop_events = [attrs for name, attrs in looped["events"] if name == "reach.loop.detected"]
    assert loop_events and loop_events[0]["reach.loop.cycle"] == ["Triage", "Billing"]
    assert loop_events[0]["reach.hop.path"] == ["Desk", "Triage", "Billing", "Triage", "Billing"]
    agents = sorted(
        (s["attributes"]["reach.hop.count"], s["name"]) for s in spans if s["name"].startswith("invoke_agent")
    )
    assert agents == [
        (1, "invoke_agent Triage"),
        (2, "invoke_agent Billing"),
        (3, "invoke_agent Triage"),
        (4, "invoke_agent Billing"),
    ]
    assert {s["trace_id"] for s in spans} == {trace_id}


OUTCOMES = {
    # outcome → (handoff status, task state the client saw, client span is an error, transitions)
    "completed": ("committed", "completed", False, ["accept", "start", "commit"]),
    "failed": ("failed", "failed", True, ["accept", "start", "fail"]),
    "rejected": ("rejected", "rejected", False, ["reject"]),
    "canceled": ("failed", "canceled", False, ["accept", "start", "fail"]),
    "message": ("committed", None, False, ["accept", "start", "commit"]),
}


@pytest.mark.parametrize("stream", [False, True], ids=["send", "stream"])
@pytest.mark.parametrize("outcome", sorted(OUTCOMES))
def test_task_state_drives_the_handoff_state(
    mesh: Mesh, caller: Recorder, outcome: str, stream: bool
) -> None:
    status, task_state, is_error, events = OUTCOMES[outcome]
    reply = ask(mesh.urls["billing"], f"outcome={outcome} pay it", stream=stream)
    assert reply.state == (task_state or "message")
    handoff = caller.one("handoff Billing")
    client = caller.one("message/stream" if stream else "message/send")
    assert handoff.attributes["reach.handoff.status"] == status
    assert transitions(handoff.events) == events
    assert client.attributes.get("a2a.task.state") == task_state
    assert (client.status.status_code == StatusCode.ERROR) is is_error
    if is_error:
        assert client.attributes["error.type"] == "task_failed"
    assert handoff.status.status_code != StatusCode.ERROR  # an outcome of the handoff, not a fault of it

    spans = trace_spans(mesh.sink, hex_trace(handoff), has("invoke_agent Billing"))
    agent = one(spans, "invoke_agent Billing")
    assert agent["attributes"]["reach.hop.count"] == 1
    assert agent["error"] is (outcome == "failed")
    assert agent["attributes"].get("a2a.task.state") == task_state


@pytest.mark.parametrize("stream", [False, True], ids=["send", "stream"])
def test_an_agent_that_raises_fails_the_handoff(mesh: Mesh, caller: Recorder, stream: bool) -> None:
    with pytest.raises(InternalError, match="agent broke"):  # the SDK answers with a JSON-RPC error
        ask(mesh.urls["billing"], "outcome=raise pay it", stream=stream)
    handoff = caller.one("handoff Billing")
    client = caller.one("message/stream" if stream else "message/send")
    assert handoff.attributes["reach.handoff.status"] == "failed"
    assert client.status.status_code == StatusCode.ERROR
    assert client.attributes["error.type"] == "a2a.utils.errors.InternalError"
    spans = trace_spans(mesh.sink, hex_trace(handoff), has("invoke_agent Billing"))
    agent = one(spans, "invoke_agent Billing")
    assert agent["error"] and agent["attributes"]["error.type"] == "RuntimeError"


@pytest.mark.parametrize("stream", [False, True], ids=["send", "stream"])
def test_the_legacy_handler_and_the_0_3_protocol(mesh: Mesh, caller: Recorder, stream: bool) -> None:
    """Legacy serves with LegacyRequestHandler and speaks A2A 0.3: the client takes the compat transport."""
    method = "message/stream" if stream else "message/send"
    reply = ask(mesh.urls["legacy"], "outcome=completed what is my balance", stream=stream)
    assert (reply.state, reply.text) == ("completed", "echo: what is my balance")
    handoff = caller.one("handoff Legacy")
    client = caller.one(method)
    assert handoff.attributes["reach.handoff.status"] == "committed"
    assert client.attributes["a2a.task.id"] == reply.task_id
    spans = trace_spans(mesh.sink, hex_trace(client), has(method, "invoke_agent Legacy", "chat fake-model"))
    server = one(spans, method, "legacy-agent")
    assert server["kind"] == "SERVER" and server["parent"] == hex_span(client)
    assert server["attributes"]["rpc.method"] == method  # the 0.3 wire name: the compat transport sent it
    assert server["attributes"]["a2a.task.id"] == reply.task_id
    assert server["attributes"]["a2a.task.state"] == "completed"
    agent = one(spans, "invoke_agent Legacy")
    assert agent["parent"] == server["span_id"] and agent["attributes"]["reach.hop.count"] == 1
    assert not [s for s in spans if s["scope"] == SDK_SCOPE or s["name"].startswith("POST")]


def test_task_requests_are_spans_but_not_handoffs(mesh: Mesh, caller: Recorder) -> None:
    from a2a.client import ClientConfig, create_client
    from a2a.utils.errors import A2AError

    url = mesh.urls["billing"]
    reply = ask(url, "outcome=completed hello")

    @reach_otel.agent(name="Desk")
    async def follow_up() -> tuple[Any, BaseException | None]:
        client = await create_client(url, ClientConfig(streaming=False))
        refused: BaseException | None = None
        try:
            task = await client.get_task(a2a_pb2.GetTaskRequest(id=reply.task_id))
            try:
                await client.cancel_task(a2a_pb2.CancelTaskRequest(id=reply.task_id))
            except A2AError as exc:  # a completed task cannot be canceled
                refused = exc
        finally:
            await client.close()
        return task, refused

    task, refused = asyncio.run(follow_up())
    assert task.id == reply.task_id and refused is not None
    assert len(caller.named("handoff Billing")) == 1  # the message only
    got = caller.one("tasks/get")
    assert got.kind == SpanKind.CLIENT
    assert got.attributes["a2a.task.id"] == reply.task_id
    assert got.attributes["a2a.task.state"] == "completed"
    assert got.attributes["gen_ai.conversation.id"] == reply.context_id
    cancel = caller.one("tasks/cancel")
    assert cancel.status.status_code == StatusCode.ERROR
    assert cancel.attributes["error.type"] == f"{type(refused).__module__}.{type(refused).__qualname__}"
    spans = trace_spans(mesh.sink, hex_trace(got), has("tasks/get", "tasks/cancel"))
    server_get = one(spans, "tasks/get")
    assert server_get["kind"] == "SERVER" and server_get["parent"] == hex_span(got)
    assert server_get["attributes"]["a2a.task.state"] == "completed"
    server_cancel = one(spans, "tasks/cancel")
    assert server_cancel["parent"] == hex_span(cancel) and server_cancel["error"]
    assert not named(spans, "invoke_agent Billing")  # no agent work for a task request


def test_a_timeout_leaves_the_handoff_unknown(mesh: Mesh, caller: Recorder) -> None:
    with pytest.raises(A2AClientTimeoutError):
        ask(mesh.urls["billing"], "outcome=slow take your time", timeout=0.5)
    handoff = caller.one("handoff Billing")
    client = caller.one("message/send")
    assert handoff.attributes["reach.handoff.status"] == "unknown"
    assert transitions(handoff.events) == ["timeout"]
    assert client.status.status_code == StatusCode.ERROR
    assert client.attributes["error.type"] == "a2a.client.errors.A2AClientTimeoutError"


def test_context_travels_in_headers_without_http_instrumentation(mesh: Mesh, caller: Recorder) -> None:
    """Plain runs without the httpx and Starlette instrumentations: the A2A one carries and continues."""
    with reach_otel.session(session_id="S-42", user_id="U-7"):
        reply = ask(mesh.urls["plain"], "outcome=headers show me")
    client = caller.one("message/send")
    headers = json.loads(reply.text)
    assert headers["traceparent"].split("-")[1:3] == [hex_trace(client), hex_span(client)]
    baggage = {k: unquote(v) for k, v in (item.split("=", 1) for item in headers["baggage"].split(","))}
    assert baggage["reach.hops"] == "1"
    assert baggage["reach.path"] == "Desk,Plain"
    assert baggage["reach.session"] == "S-42" and baggage["reach.user"] == "U-7"
    spans = trace_spans(mesh.sink, hex_trace(client), has("message/send", "invoke_agent Plain"))
    server = one(spans, "message/send", "plain-agent")
    assert server["kind"] == "SERVER" and server["scope"] == "reach_otel"  # ours: no HTTP span to take over
    assert server["parent"] == hex_span(client)
    agent = one(spans, "invoke_agent Plain")
    assert agent["parent"] == server["span_id"]
    assert agent["attributes"]["reach.hop.count"] == 1
    assert agent["attributes"]["gen_ai.conversation.id"] == "S-42"  # the caller's session wins
    assert agent["attributes"]["user.id"] == "U-7"
    assert server["attributes"]["gen_ai.conversation.id"] == reply.context_id  # the A2A contextId


def test_no_second_client_span_or_headers_with_httpx_instrumented(mesh: Mesh, caller: Recorder) -> None:
    httpx_instrumentor = HTTPXInstrumentor()
    httpx_instrumentor.instrument()
    try:
        reply = ask(mesh.urls["billing"], "outcome=headers show me")
    finally:
        httpx_instrumentor.uninstrument()
    client = caller.one("message/send")
    clients = [s.name for s in caller.spans if s.kind == SpanKind.CLIENT]
    assert sorted(clients) == ["GET", "message/send"]  # the card fetch, and the A2A request alone
    headers = json.loads(reply.text)
    assert headers["traceparent"].split("-")[2] == hex_span(client)  # not an HTTP span under it
    keys = [item.split("=", 1)[0] for item in headers["baggage"].split(",")]
    assert sorted(keys) == sorted(set(keys)) and "reach.hops" in keys


def test_an_exploding_extractor_changes_nothing(
    mesh: Mesh, caller: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Broken's server and this client both have every extractor raising: same answers, same errors."""
    outcomes = ("completed", "failed", "canceled")
    normal = [ask(mesh.urls["billing"], f"outcome={o} pay it").state for o in outcomes]

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("extractor exploded")

    for name in ("facts", "request_attributes", "result_attributes", "card_name", "target_name"):
        monkeypatch.setattr(extract, name, boom)
    reply = ask(mesh.urls["broken"], "what is my balance")
    assert (reply.state, reply.text) == ("completed", "echo: what is my balance")
    assert [ask(mesh.urls["broken"], f"outcome={o} pay it").state for o in outcomes] == normal
    with pytest.raises(InternalError, match="agent broke"):
        ask(mesh.urls["broken"], "outcome=raise pay it")
    streamed = ask(mesh.urls["broken"], "outcome=rejected pay it", stream=True)
    assert (streamed.state, streamed.text) == ("rejected", "not mine")
    with pytest.raises(A2AClientTimeoutError):
        ask(mesh.urls["broken"], "outcome=slow take your time", timeout=0.5)


def test_on_loop_raise_stops_the_message_before_it_is_sent(
    mesh: Mesh, make_recorder: Callable[..., Recorder]
) -> None:
    rec = make_recorder(max_hops=0, on_loop="raise")
    instrumentor = A2AInstrumentor()
    instrumentor.instrument()
    try:
        with pytest.raises(HopLimitExceeded):
            ask(mesh.urls["billing"], "outcome=completed hello")
    finally:
        instrumentor.uninstrument()
    handoff = rec.one("handoff Billing")
    assert handoff.attributes["reach.handoff.status"] == "rejected"
    assert handoff.attributes["reach.hop.limit_exceeded"] is True
    assert not rec.named("message/send")
    time.sleep(0.5)
    assert not [s for s in exported(mesh.sink) if s["trace_id"] == hex_trace(handoff)]  # never sent


def test_an_unsampled_caller_stays_unsampled(mesh: Mesh) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    previous = set_handler(TelemetryHandler(tracer_provider=provider, settings=load_settings(env={})))
    instrumentor = A2AInstrumentor()
    instrumentor.instrument()
    try:
        reply = ask(mesh.urls["billing"], "outcome=headers show me")
    finally:
        instrumentor.uninstrument()
        set_handler(previous)
        provider.shutdown()
    assert reply.state == "completed"
    _, trace_id, _, flags = json.loads(reply.text)["traceparent"].split("-")
    assert int(flags, 16) & 1 == 0  # not sampled: the decision travels, the far side records nothing
    assert not exporter.get_finished_spans()
    time.sleep(0.5)
    assert not [s for s in exported(mesh.sink) if s["trace_id"] == trace_id]


def test_uninstrument_restores_the_sdk(mesh: Mesh, rec: Recorder) -> None:
    from a2a.client.transports.jsonrpc import JsonRpcTransport
    from a2a.server.request_handlers import DefaultRequestHandlerV2

    instrumentor = A2AInstrumentor()
    instrumentor.instrument()
    instrumentor.instrument()  # a second call is harmless
    assert isinstance(vars(JsonRpcTransport)["send_message"], FunctionWrapper)
    assert isinstance(vars(DefaultRequestHandlerV2)["__init__"], FunctionWrapper)
    assert ask(mesh.urls["billing"], "outcome=completed hello").state == "completed"
    assert rec.one("message/send").kind == SpanKind.CLIENT
    rec.clear()

    instrumentor.uninstrument()
    assert sdk.is_sdk_traced(vars(JsonRpcTransport)["send_message"])  # the SDK's own decorated method
    assert not isinstance(vars(DefaultRequestHandlerV2)["__init__"], FunctionWrapper)
    assert not [attr for _, owner, attr in sdk.targets() if isinstance(vars(owner)[attr], FunctionWrapper)]
    assert ask(mesh.urls["billing"], "outcome=completed hello").state == "completed"
    assert [s.name for s in rec.spans] == ["invoke_agent Desk"]


def test_the_instrumentor_is_registered() -> None:
    assert "a2a" in instrumentation.available()
    assert instrumentation.registry()["a2a"] == "reach_otel.instrumentation.a2a:A2AInstrumentor"
    from importlib.metadata import entry_points

    (point,) = [p for p in entry_points(group="opentelemetry_instrumentor") if p.name == "reach_a2a"]
    assert point.load() is A2AInstrumentor


# -- pure parts ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("current", "task_state", "final", "events"),
    [
        (hf.CREATED, "submitted", True, ("accept",)),
        (hf.CREATED, "submitted", False, ()),  # more may follow: a rejection would still be one
        (hf.CREATED, "working", True, ("accept", "start")),
        (hf.CREATED, "completed", True, ("accept", "start", "commit")),
        (hf.ACCEPTED, "completed", True, ("start", "commit")),
        (hf.RUNNING, "completed", True, ("commit",)),
        (hf.CREATED, "failed", True, ("accept", "start", "fail")),
        (hf.CREATED, "canceled", True, ("accept", "start", "fail")),
        (hf.CREATED, "rejected", True, ("reject",)),
        (hf.ACCEPTED, "rejected", True, ("start", "fail")),  # no accepted → rejected in aa-handoff/v1
        (hf.CREATED, "unknown", True, ("timeout",)),
        (hf.RUNNING, "unknown", True, ("timeout",)),
        (hf.ACCEPTED, "unknown", True, ()),  # ends unknown when its span ends
        (hf.RUNNING, "input-required", True, ()),
        (hf.RUNNING, "working", True, ()),
        (hf.RUNNING, "submitted", True, ()),  # never backwards
        (hf.COMMITTED, "failed", True, ()),  # terminal stays
        (hf.CREATED, "no-such-state", True, ()),
    ],
)
def test_events_towards(current: str, task_state: str, final: bool, events: tuple[str, ...]) -> None:
    assert states.events_towards(current, task_state, final=final) == events
    state = current
    for event in events:  # every path is legal
        after = hf.next_state(state, event)
        assert after is not None
        state = after


def test_extraction_of_the_sdk_messages() -> None:
    task = a2a_pb2.Task(
        id="T1", context_id="C1", status=a2a_pb2.TaskStatus(state=a2a_pb2.TaskState.TASK_STATE_INPUT_REQUIRED)
    )
    assert extract.facts(a2a_pb2.StreamResponse(task=task)) == extract.Facts("T1", "C1", "input-required")
    update = a2a_pb2.TaskStatusUpdateEvent(
        task_id="T1", context_id="C1", status=a2a_pb2.TaskStatus(state=a2a_pb2.TaskState.TASK_STATE_COMPLETED)
    )
    assert extract.facts(update).state == "completed"
    message = a2a_pb2.Message(message_id="M1", context_id="C1")
    assert extract.facts(a2a_pb2.SendMessageResponse(message=message)).is_message
    assert extract.facts(a2a_pb2.StreamResponse()) == extract.Facts()
    assert extract.task_state_name(0) == "unknown"
    assert extract.task_state_name(99) == "unknown"
    request = a2a_pb2.SendMessageRequest(
        message=a2a_pb2.Message(message_id="M1", context_id="C1", task_id="T1")
    )
    assert dict(extract.request_attributes("message/send", request)) == {
        "a2a.method.name": "message/send",
        "a2a.message.id": "M1",
        "a2a.task.id": "T1",
        "gen_ai.conversation.id": "C1",
    }
    assert (
        dict(extract.request_attributes("tasks/get", a2a_pb2.GetTaskRequest(id="T9")))["a2a.task.id"] == "T9"
    )


# -- the example, unmodified, under `reach-otel run`, into a real collector ---------------------------
def run_example(args: list[str], env: dict[str, str], **kwargs: Any) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "reach_otel", "run", "--", sys.executable, *args]
    return subprocess.Popen(command, cwd=EXAMPLE, env=env, text=True, **kwargs)


def test_the_a2a_mesh_example_is_one_trace_in_the_collector(tmp_path: Path) -> None:
    ports = {"triage": free_port(), "billing": free_port()}
    procs: list[subprocess.Popen[str]] = []
    with FakeLLMServer() as llm, CollectorProcess(tmp_path / "a2a.duckdb") as collector:
        env = clean_env(
            OTEL_EXPORTER_OTLP_ENDPOINT=collector.url,
            OTEL_BSP_SCHEDULE_DELAY="100",
            OPENAI_BASE_URL=llm.openai_base_url,
            OPENAI_API_KEY="not-needed",
            TRIAGE_URL=f"http://127.0.0.1:{ports['triage']}",
            BILLING_URL=f"http://127.0.0.1:{ports['billing']}",
        )
        try:
            for role, port in ports.items():
                with open(tmp_path / f"{role}.log", "w") as log:
                    procs.append(
                        run_example(
                            ["serve.py", "--agent", role, "--port", str(port)],
                            {**env, "OTEL_SERVICE_NAME": f"{role}-agent"},
                            stdout=log,
                            stderr=subprocess.STDOUT,
                        )
                    )
            for role, proc in zip(ports, procs, strict=True):
                wait_card(f"http://127.0.0.1:{ports[role]}", proc)
            asked = run_example(
                ["ask.py", "I want a refund for the login outage"],
                {**env, "OTEL_SERVICE_NAME": "desk-client"},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            out, err = asked.communicate(timeout=60)
            assert asked.returncode == 0, err
            assert "instrumented:" in err and "a2a" in err  # the start-up line names it
            answer = json.loads(out.strip().splitlines()[-1])
            assert answer["state"] == "completed"
            assert answer["answer"].startswith("echo: I want a refund for the login outage")
            deadline = time.monotonic() + 30
            found: dict[str, Any] = {}
            while time.monotonic() < deadline:
                traces = collector.get("/api/traces", **{"attr.a2a.task.id": answer["task_id"]})["traces"]
                if traces:
                    found = collector.get(f"/api/traces/{traces[0]['trace_id']}")
                    if sum(s["name"] == "invoke_agent Billing" for s in found["spans"]) == 2 and {
                        "desk-client",
                        "triage-agent",
                        "billing-agent",
                    } <= {s["service"] for s in found["spans"]}:
                        break
                time.sleep(0.3)
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(timeout=15)

    logs = "".join((tmp_path / f"{role}.log").read_text() for role in ports)
    assert "Traceback" not in logs, logs
    assert "instrumented:" in logs and "a2a" in logs
    spans = found["spans"]
    assert len(found["roots"]) == 1 and found["roots"][0]["name"] == "message/send"  # ask.py's request
    assert {s["service"] for s in spans} == {"desk-client", "triage-agent", "billing-agent"}
    handoffs = sorted(
        (s["attributes"]["reach.hop.count"], s["service"], s["name"], s["attributes"]["reach.handoff.status"])
        for s in spans
        if s["name"].startswith("handoff")
    )
    assert handoffs == [
        (1, "triage-agent", "handoff Billing", "committed"),
        (2, "billing-agent", "handoff Triage", "committed"),
        (3, "triage-agent", "handoff Billing", "committed"),
    ]
    looped = [s for s in spans if s["attributes"].get("reach.loop.detected") is True]
    assert [s["attributes"]["reach.hop.count"] for s in looped] == [3]
    assert [e["name"] for e in looped[0]["events"]].count("reach.loop.detected") == 1
    agents = sorted(
        (s["attributes"]["reach.hop.count"], s["name"]) for s in spans if s["name"].startswith("invoke_agent")
    )
    assert agents == [
        (0, "invoke_agent Triage"),
        (1, "invoke_agent Billing"),
        (2, "invoke_agent Triage"),
        (3, "invoke_agent Billing"),
    ]
    ids = {s["span_id"]: s for s in spans}
    chat = [s for s in spans if s["name"] == "chat fake-model"]
    assert len(chat) == 1 and ids[chat[0]["parent_span_id"]]["name"] == "invoke_agent Billing"
    assert all(
        s["attributes"]["gen_ai.conversation.id"] == answer["context_id"]
        for s in spans
        if s["name"].startswith("invoke_agent")
    )
    servers = [s for s in spans if s["kind"] == "SERVER" and s["name"].startswith("message/")]
    assert sorted(s["name"] for s in servers) == [
        "message/send",
        "message/stream",
        "message/stream",
        "message/stream",
    ]
    assert not [s for s in spans if s["name"].startswith(("POST", "a2a."))]

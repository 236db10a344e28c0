"""MCP instrumentation against the real ``mcp`` SDK: client and server in their own processes.

The client process (``mcp_apps.py call``) and the server (stdio, started by the client; or
streamable HTTP under uvicorn) each run ``reach_otel.init()``, so the SDK's own tracing is live under
the same provider; both export to one OTLP sink. In-process tests cover content capture, an
exploding extractor and ``uninstrument``.
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
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from collector_process import CollectorProcess, free_port
from mcp import Client, MCPError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from otlp_sink import OtlpSink, _value
from wrapt import FunctionWrapper

import reach_otel
from reach_otel.instrumentation.mcp import MCPInstrumentor, extract, stdio_env
from reach_otel.run import BOOTSTRAP_DIR

HERE = Path(__file__).resolve().parent
APPS = HERE / "mcp_apps.py"
sys.path.insert(0, str(HERE))
import mcp_apps  # noqa: E402

EXAMPLE = HERE.parents[1] / "examples" / "mcp_tools" / "app.py"
TOOLS = ("add", "echo_meta", "fail", "delegate", "forbidden")
KINDS = {1: "INTERNAL", 2: "SERVER", 3: "CLIENT"}


def clean_env(sink: OtlpSink) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_", "_REACH_"))}
    env.update(OTEL_EXPORTER_OTLP_ENDPOINT=sink.url, OTEL_BSP_SCHEDULE_DELAY="100")
    return env


def exported(sink: OtlpSink) -> list[dict[str, Any]]:
    """Every span the sink got, with what ``OtlpSink.spans`` leaves out: scope, kind, status, links."""
    out = []
    for req in list(sink.requests):
        request: ExportTraceServiceRequest = req["request"]
        for rs in request.resource_spans:
            service = next(
                (_value(kv.value) for kv in rs.resource.attributes if kv.key == "service.name"), None
            )
            for ss in rs.scope_spans:
                for span in ss.spans:
                    out.append(
                        {
                            "name": span.name,
                            "service": service,
                            "scope": ss.scope.name,
                            "kind": KINDS.get(span.kind, str(span.kind)),
                            "status": "ERROR" if span.status.code == 2 else "OK/UNSET",
                            "message": span.status.message,
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent": span.parent_span_id.hex() or None,
                            "links": [link.span_id.hex() for link in span.links],
                            "attributes": {kv.key: _value(kv.value) for kv in span.attributes},
                            "exceptions": [
                                (
                                    e.name,
                                    *(
                                        next((_value(kv.value) for kv in e.attributes if kv.key == k), None)
                                        for k in ("exception.type", "exception.message")
                                    ),
                                )
                                for e in span.events
                                if e.name == "exception"
                            ],
                        }
                    )
    return out


def wait_spans(sink: OtlpSink, done: Any, timeout: float = 20) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        spans = exported(sink)
        if done(spans) or time.monotonic() > deadline:
            return spans
        time.sleep(0.1)


def run_client(env: dict[str, str], *args: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, str(APPS), *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-4000:]
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


@contextmanager
def http_server(env: dict[str, str]) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(APPS), "serve", "http", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the MCP server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def mcp_spans(spans: list[dict[str, Any]], service_prefix: str, tool: str) -> list[dict[str, Any]]:
    return [
        s
        for s in spans
        if s["service"].startswith(service_prefix)
        and s["attributes"].get("mcp.method.name") == "tools/call"
        and s["attributes"].get("gen_ai.tool.name") == tool
    ]


def _server_spans_arrived(spans: list[dict[str, Any]]) -> bool:
    return all(len(mcp_spans(spans, "mcp-tools", tool)) >= 1 for tool in TOOLS) and any(
        s["name"] == "invoke_workflow mcp_turn" for s in spans
    )


@pytest.mark.parametrize(
    ("transport", "mode"), [("stdio", "auto"), ("stdio", "legacy"), ("http", "auto"), ("http", "legacy")]
)
def test_a_tool_call_to_another_process_is_one_trace(transport: str, mode: str) -> None:
    with OtlpSink() as sink:
        env = clean_env(sink)
        if transport == "stdio":
            seen = run_client(env, "call", "stdio", mode)  # the SDK starts the server: our env reaches it
        else:
            with http_server(env) as url:
                seen = run_client(env, "call", url, mode)
        spans = wait_spans(sink, _server_spans_arrived)

    # The tools answered as they do uninstrumented; the app's own _meta keys reached the server.
    assert seen["add"] == {"result": 5}
    assert seen["delegate"] == {"result": "done: q1"}
    assert seen["fail_is_error"] is True
    assert seen["forbidden"] == [-32050, "not allowed here"]
    meta = seen["meta"]
    assert meta["app.key"] == "kept" and meta["progress"] == "n/a"
    assert meta["traceparent"].split("-")[1] == seen["trace_id"]
    assert {"reach.session=SESS-MCP", "reach.user=U-7", "reach.hops=1"} <= set(meta["baggage"].split(","))

    # One trace, client and server; no span of the SDK's own beside ours.
    trace_id = seen["trace_id"]
    assert {s["trace_id"] for s in spans} == {trace_id}, {(s["name"], s["trace_id"]) for s in spans}
    assert {s["scope"] for s in spans} == {"reach_otel"}
    assert not [s for s in spans if s["name"].startswith("MCP send")]
    version = "2025-11-25" if mode == "legacy" else "2026-07-28"
    by_id = {s["span_id"]: s for s in spans}
    caller = next(s for s in spans if s["name"] == "invoke_agent CallerAgent")
    assert caller["attributes"]["reach.agent.tool_calls"] == len(TOOLS)

    for tool in TOOLS:
        (client,) = [s for s in mcp_spans(spans, "mcp-agent", tool) if s["kind"] == "CLIENT"]
        (server,) = mcp_spans(spans, "mcp-tools", tool)
        assert client["name"] == server["name"] == f"tools/call {tool}"
        assert server["kind"] == "SERVER"
        assert server["parent"] == client["span_id"]
        assert by_id[client["parent"]]["name"] == "invoke_agent CallerAgent"
        for span in (client, server):
            attrs = span["attributes"]
            assert attrs["gen_ai.operation.name"] == "execute_tool"
            assert attrs["mcp.protocol.version"] == version
            assert attrs["gen_ai.conversation.id"] == "SESS-MCP"
            assert attrs["user.id"] == "U-7"
            assert attrs["reach.task.id"] == "T-3"
            assert "gen_ai.tool.call.arguments" not in attrs  # content is opt-in
        assert client["attributes"]["jsonrpc.request.id"] == server["attributes"]["jsonrpc.request.id"]
        assert client["attributes"]["reach.agent.name"] == "CallerAgent"
        if transport == "http" and mode == "legacy":
            session_id = client["attributes"]["mcp.session.id"]
            assert len(session_id) >= 16 and server["attributes"]["mcp.session.id"] == session_id
        else:  # stdio has no session; the 2026 streamable HTTP is stateless
            assert "mcp.session.id" not in client["attributes"]
        if transport == "http":
            assert server["attributes"]["network.transport"] == "tcp"
            (link,) = server["links"]
            assert by_id[link]["name"] == "POST /mcp" and by_id[link]["kind"] == "SERVER"
        else:
            assert server["links"] == []

    # Each request is one span per side.
    requests = [s for s in spans if "mcp.method.name" in s["attributes"]]
    keys = [(s["service"], s["kind"], s["attributes"]["jsonrpc.request.id"]) for s in requests]
    assert len(keys) == len(set(keys)), sorted(keys)

    for tool, error_type in (("fail", "tool_error"), ("forbidden", "-32050")):
        for span in mcp_spans(spans, "mcp-", tool):
            assert span["status"] == "ERROR"
            assert span["attributes"]["error.type"] == error_type
    for span in mcp_spans(spans, "mcp-", "forbidden"):
        assert span["attributes"]["rpc.response.status_code"] == "-32050"
        assert span["message"] == "not allowed here"
    for span in mcp_spans(spans, "mcp-", "fail"):  # what the tool answered, on both sides
        assert span["message"].startswith("Error executing tool fail"), span["message"]
        assert ("exception", "tool_error", span["message"]) in span["exceptions"]
    assert all(s["status"] != "ERROR" for tool in ("add", "delegate") for s in mcp_spans(spans, "mcp-", tool))

    # Hop state crossed the hop: the server's agent continues at hop 1, its handoff is hop 2.
    (tool_agent,) = [s for s in spans if s["name"] == "invoke_agent ToolAgent"]
    assert by_id[tool_agent["parent"]]["name"] == "tools/call delegate"
    assert by_id[tool_agent["parent"]]["kind"] == "SERVER"
    assert tool_agent["attributes"]["reach.hop.count"] == 1
    (handoff,) = [s for s in spans if s["name"] == "handoff HelperAgent"]
    assert handoff["attributes"]["reach.hop.count"] == 2
    assert handoff["attributes"]["gen_ai.conversation.id"] == "SESS-MCP"

    first = "initialize" if mode == "legacy" else "server/discover"
    assert sorted(s["kind"] for s in spans if s["name"] == first) == ["CLIENT", "SERVER"]


def server_adds(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = [s for s in spans if s["name"] == "tools/call add" and s["kind"] == "SERVER"]
    return sorted(found, key=lambda s: int(s["attributes"]["jsonrpc.request.id"]))


def test_uninstrument_gives_the_sdk_its_own_tracing_back() -> None:
    with OtlpSink() as sink:
        env = clean_env(sink)
        with http_server(env) as url:
            seen = run_client(env, "call-uninstrument", url, "legacy")
            spans = wait_spans(
                sink,
                lambda got: (
                    len([s for s in got if s["name"] == "tools/call add" and s["kind"] == "SERVER"]) >= 2
                ),
            )
    assert seen["removed"] == ["mcp"]
    assert seen["first"] == {"result": 2} and seen["second"] == {"result": 4}
    ours = [s for s in spans if s["service"] == "mcp-agent" and s["name"] == "tools/call add"]
    sdk = [s for s in spans if s["service"] == "mcp-agent" and s["name"] == "MCP send tools/call add"]
    assert [s["scope"] for s in ours] == ["reach_otel"]
    assert [s["scope"] for s in sdk] == ["mcp-python-sdk"]
    servers = server_adds(spans)
    # The server still continues each call's trace: ours, then the SDK's own span and injection.
    assert [s["parent"] for s in servers] == [ours[0]["span_id"], sdk[0]["span_id"]]
    assert servers[1]["trace_id"] == sdk[0]["trace_id"]


def fetch_trace(collector: CollectorProcess, trace_id: str, done: Any) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:
        try:
            found = dict(collector.get(f"/api/traces/{trace_id}"))
            if done(found) or time.monotonic() > deadline:
                return found
        except Exception:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.2)


def test_the_mcp_tools_example_is_one_trace_under_reach_otel_run(tmp_path: Path) -> None:
    with CollectorProcess(tmp_path / "mcp.duckdb") as collector:
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_", "_REACH_", "OPENAI_"))
        }
        env.update(OTEL_EXPORTER_OTLP_ENDPOINT=collector.url, OTEL_BSP_SCHEDULE_DELAY="100")
        command = [sys.executable, "-m", "reach_otel", "run", "--service-name", "support-agent", "--"]
        out = subprocess.run(
            [*command, sys.executable, str(EXAMPLE)], env=env, capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stderr[-4000:]
        trace_id, answer = out.stdout.strip().splitlines()[-1].split(None, 1)
        invoice, refund = answer.split(" | ")
        assert invoice == "echo: invoice INV-7: 42 EUR, paid on 3 March"
        assert refund == "echo: refund for INV-7: approved, 42 EUR back within 5 days"
        servers = ("tools/call lookup_invoice", "tools/call refund_status")
        trace = fetch_trace(
            collector,
            trace_id,
            lambda t: all(any(s["name"] == n and s["kind"] == "SERVER" for s in t["spans"]) for n in servers),
        )
    spans = trace["spans"]
    (root,) = trace["roots"]
    assert root["name"] == "invoke_workflow support_turn" and root["service"] == "support-agent"
    assert {s["service"] for s in spans} == {"support-agent", "support-tools-stdio", "support-tools-http"}
    by_id = {s["span_id"]: s for s in spans}
    for name, agent, service in (
        ("tools/call lookup_invoice", "BillingAgent", "support-tools-stdio"),
        ("tools/call refund_status", "RefundAgent", "support-tools-http"),
    ):
        (client,) = [s for s in spans if s["name"] == name and s["kind"] == "CLIENT"]
        (server,) = [s for s in spans if s["name"] == name and s["kind"] == "SERVER"]
        assert by_id[client["parent_span_id"]]["name"] == f"invoke_agent {agent}"
        assert server["parent_span_id"] == client["span_id"] and server["service"] == service
        assert server["attributes"]["gen_ai.conversation.id"] == "SESS-42"
        assert server["attributes"]["user.id"] == "U-1"
        assert client["attributes"]["reach.agent.name"] == agent
        assert server["status"]["code"] != "ERROR"
    chats = [s for s in spans if s["name"] == "chat fake-model"]
    assert len(chats) == 4 and {by_id[c["parent_span_id"]]["name"] for c in chats} == {
        "invoke_agent BillingAgent",
        "invoke_agent RefundAgent",
    }
    (handoff,) = [s for s in spans if s["name"] == "handoff RefundAgent"]
    assert handoff["attributes"]["reach.handoff.status"] == "committed"
    refund_agent = next(s for s in spans if s["name"] == "invoke_agent RefundAgent")
    assert refund_agent["attributes"]["reach.hop.count"] == 1
    assert not [s for s in spans if s["name"].startswith("MCP send")]


# -- in process: the client and an in-process server (the SDK's direct dispatcher) --------------------


@pytest.fixture
def instrumented() -> Iterator[MCPInstrumentor]:
    instrumentor = MCPInstrumentor()
    instrumentor.instrument()
    yield instrumentor
    instrumentor.uninstrument()


def call_tools(calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async def run() -> list[Any]:
        results: list[Any] = []
        async with Client(mcp_apps.build_server()) as client:
            for name, arguments in calls:
                try:
                    result = await client.call_tool(name, arguments, meta={"app.key": "kept"})
                    results.append((result.is_error, result.structured_content))
                except MCPError as exc:
                    results.append((type(exc), exc.code, exc.message))
        return results

    return asyncio.run(run())


CALLS = [("add", {"a": 4, "b": 5}), ("fail", {"reason": "x"}), ("forbidden", {}), ("echo_meta", {})]


def test_content_capture_goes_through_the_redactor(make_recorder: Any, instrumented: Any) -> None:
    rec = make_recorder(capture_content=True)
    [(is_error, result)] = call_tools([("delegate", {"query": "mail bob@example.com now"})])
    assert (is_error, result) == (False, {"result": "done: mail bob@example.com now"})
    for span in [s for s in rec.spans if s.name == "tools/call delegate"]:
        arguments = span.attributes["gen_ai.tool.call.arguments"]
        assert "bob@example.com" not in arguments and "now" in arguments
        assert "bob@example.com" not in span.attributes["gen_ai.tool.call.result"]
        assert "done" in span.attributes["gen_ai.tool.call.result"]
    assert {s.kind.name for s in rec.spans if s.name == "tools/call delegate"} == {"CLIENT", "SERVER"}


def test_an_exploding_extractor_changes_no_result_nor_exception(
    rec: Any, instrumented: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = call_tools(CALLS)
    assert rec.named("tools/call add")  # instrumented for real

    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("extractor bug")

    for name in ("request_attributes", "is_tool_error", "error_code", "target", "trace_fields"):
        monkeypatch.setattr(extract, name, explode)
    rec.clear()
    got = call_tools(CALLS)
    assert got == expected
    assert got[2] == (MCPError, -32050, "not allowed here")
    assert got[3][1]["app.key"] == "kept"


def test_uninstrument_restores_the_sdk(rec: Any) -> None:
    import mcp.server._otel as sdk_middleware
    import mcp.shared.jsonrpc_dispatcher as dispatcher

    patched = (
        lambda: vars(dispatcher.JSONRPCDispatcher)["send_raw_request"],
        lambda: dispatcher.otel_span,
        lambda: dispatcher.inject_trace_context,
        lambda: vars(sdk_middleware.OpenTelemetryMiddleware)["__call__"],
    )
    instrumentor = MCPInstrumentor()
    instrumentor.instrument()
    try:
        assert all(isinstance(get(), FunctionWrapper) for get in patched)
        call_tools(CALLS[:1])
        assert {s.kind.name for s in rec.named("tools/call add")} == {"CLIENT", "SERVER"}
    finally:
        instrumentor.uninstrument()
    assert not any(isinstance(get(), FunctionWrapper) for get in patched)
    rec.clear()
    assert call_tools(CALLS[:1]) == [(False, {"result": 9})]
    assert rec.spans == []
    assert reach_otel.uninstrument("mcp") == []  # nothing left applied


# -- pure parts ---------------------------------------------------------------------------------------


def test_request_attributes_follow_the_mcp_conventions() -> None:
    tool = dict(extract.request_attributes("tools/call", {"name": "add", "arguments": {}}, 7))
    assert tool == {
        "mcp.method.name": "tools/call",
        "jsonrpc.request.id": "7",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
    }
    assert dict(extract.request_attributes("prompts/get", {"name": "review"})) == {
        "mcp.method.name": "prompts/get",
        "gen_ai.prompt.name": "review",
    }
    assert dict(extract.request_attributes("resources/read", {"uri": "file:///a"}))["mcp.resource.uri"] == (
        "file:///a"
    )
    assert extract.target("tools/list", {"name": "x"}) is None
    assert extract.requested_protocol_version("tools/call", {}, {"headers": {"MCP-Protocol-Version": "v1"}})
    assert extract.requested_protocol_version("initialize", {"protocolVersion": "2025-06-18"}, None) == (
        "2025-06-18"
    )
    assert extract.is_tool_error("tools/call", {"isError": True})
    assert not extract.is_tool_error("tools/call", {"isError": "true"})
    said = {"isError": True, "content": [{"type": "text", "text": "no forecast for 'Atlantis'"}]}
    assert extract.tool_error_message(said) == "no forecast for 'Atlantis'"
    blocks = [{"type": "image", "data": "..."}, {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    assert extract.tool_error_message({"content": blocks}) == "a\nb"
    assert extract.tool_error_message({"content": [{"type": "text", "text": "x" * 5000}]}) == "x" * 1024
    assert extract.tool_error_message({"content": "not a list"}) == extract.tool_error_message(None) == ""
    assert extract.error_code(MCPError(-32601, "Method not found")) == ("-32601", "Method not found")
    assert extract.error_code(ValueError("x")) is None
    assert extract.trace_fields({"traceparent": "00-x", "baggage": 3, "app": "y"}) == {"traceparent": "00-x"}


def test_a_stdio_server_inherits_the_configuration() -> None:
    hook = str(BOOTSTRAP_DIR)
    parent = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
        "OTEL_SERVICE_NAME": "app",
        "_REACH_OTEL_RUN_SERVICE": "app",
        "REACH_OTEL_AUTO": "1",
        "PYTHONPATH": os.pathsep.join([hook, "/elsewhere"]),
        "SECRET_TOKEN": "not passed on",
    }
    env = stdio_env.child_env({"PATH": "/bin"}, ["/usr/bin/python3", "tools_server.py"], parent)
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://127.0.0.1:9"
    assert env["REACH_OTEL_AUTO"] == "1"
    assert env["PYTHONPATH"] == hook  # the start-up hook only, not the app's own paths
    assert env["OTEL_SERVICE_NAME"] == "tools_server"  # derived for the server, not the client's name
    assert "SECRET_TOKEN" not in env and env["PATH"] == "/bin"
    mine = stdio_env.child_env(
        {"OTEL_SERVICE_NAME": "tools", "PYTHONPATH": "/x"}, ["python3", "s.py"], parent
    )
    assert mine["OTEL_SERVICE_NAME"] == "tools" and mine["PYTHONPATH"] == "/x"
    # A name given to the app (--service-name, or exported) is the app's, not its server's.
    named = stdio_env.child_env(
        None, ["python3", "-m", "desk.tools"], {**parent, "_REACH_OTEL_RUN_SERVICE": ""}
    )
    assert named["OTEL_SERVICE_NAME"] == "desk.tools"
    outside_run = stdio_env.child_env(None, ["python3", "s.py"], {"OTEL_SERVICE_NAME": "desk"})
    assert outside_run["OTEL_SERVICE_NAME"] == "s"
    assert stdio_env.child_env(None, ["python3", "s.py"], {}) == {"_REACH_OTEL_STDIO_CHILD": "1"}


def test_with_the_collector_down_the_stdio_server_leaves_the_warning_to_its_client() -> None:
    """The client says once, on one plain line, that the collector refuses spans; the stdio server
    it started exports to the same collector and shares its stderr, so it says nothing more (it
    used to repeat it through the server's own log handler, as a box of six lines)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_", "_REACH_", "OPENAI_"))}
    with socket.socket() as refusing:  # bound, never listened on: connections to it are refused
        refusing.bind(("127.0.0.1", 0))
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{refusing.getsockname()[1]}"
        command = [sys.executable, "-m", "reach_otel", "run", "--service-name", "support-agent", "--"]
        out = subprocess.run(
            [*command, sys.executable, str(EXAMPLE)], env=env, capture_output=True, text=True, timeout=120
        )
    assert out.returncode == 0, out.stderr[-4000:]
    told = [line for line in out.stderr.splitlines() if "reach_otel" in line or "refuses" in line]
    assert len(told) == 1 and told[0].startswith("reach_otel: the collector at"), out.stderr[-4000:]
    assert stdio_env.child_env(None, ["python3", "s.py"], {})["_REACH_OTEL_STDIO_CHILD"] == "1"

"""inject / extract / attach: headers and /invoke bodies, hop state in baggage, and a real HTTP hop."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

from opentelemetry import baggage, trace
from opentelemetry.trace import format_span_id, format_trace_id

import reach_otel


def test_inject_headers_carries_traceparent_and_hop_baggage(rec) -> None:
    @reach_otel.agent(name="Triage")
    def triage() -> dict:
        with reach_otel.handoff("Triage", "Billing", mode="delegate"):
            return reach_otel.inject({})

    headers = triage()
    handoff = rec.one("handoff Billing")
    trace_id = format_trace_id(handoff.context.trace_id)
    assert headers["traceparent"].startswith(f"00-{trace_id}-{format_span_id(handoff.context.span_id)}-")
    assert "reach.hops=1" in headers["baggage"]
    assert "reach.path=Triage%2CBilling" in headers["baggage"]


def test_inject_invoke_body_sets_context_trace_id(rec) -> None:
    @reach_otel.agent(name="Gateway")
    def gateway() -> dict:
        body = {
            "request_id": "r1",
            "invoke_mode": "sync",
            "target": {"agent_id": "data", "capability": "query"},
            "params": {},
            "context": {"tenant_id": "t1", "timeout_ms": 10000},
        }
        returned = reach_otel.inject(body)
        assert returned is body
        return body

    body = gateway()
    span = rec.one("invoke_agent Gateway")
    assert body["context"]["trace_id"] == format_trace_id(span.context.trace_id)
    assert body["context"]["traceparent"].split("-")[2] == format_span_id(span.context.span_id)
    assert body["context"]["tenant_id"] == "t1"
    assert body["params"] == {}


def test_extract_headers_case_insensitive_and_attach_continues_trace(rec) -> None:
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    headers = {
        "Traceparent": f"00-{trace_id}-00f067aa0ba902b7-01",
        "Baggage": "reach.hops=2,reach.path=A%2CB%2CA",
    }

    @reach_otel.agent(name="B")
    def b() -> None:
        pass

    with reach_otel.attach(headers) as ctx:
        assert baggage.get_baggage("reach.hops", ctx) == "2"
        b()
    span = rec.one("invoke_agent B")
    assert format_trace_id(span.context.trace_id) == trace_id
    assert format_span_id(span.parent.span_id) == "00f067aa0ba902b7"
    assert span.parent.is_remote
    assert span.attributes["reach.hop.count"] == 2


def test_extract_invoke_body_with_only_a_trace_id(rec) -> None:
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    ctx = reach_otel.extract({"request_id": "r", "context": {"trace_id": trace_id}})
    assert format_trace_id(trace.get_current_span(ctx).get_span_context().trace_id) == trace_id
    for bad in (
        {"context": {"trace_id": "zz"}},
        {"context": {"trace_id": "0" * 32}},
        {"context": "nope"},
        None,
        42,
    ):
        assert not trace.get_current_span(reach_otel.extract(bad)).get_span_context().is_valid  # type: ignore[arg-type]


def test_hop_count_continues_across_an_inject_extract_boundary(rec) -> None:
    """The callee has no in-process state for the trace: only the baggage tells it the hop count."""

    @reach_otel.agent(name="Billing")
    def billing() -> dict:
        with reach_otel.handoff("Billing", "Tech"):
            return reach_otel.inject({"request_id": "r2", "context": {}})

    @reach_otel.agent(name="Triage")
    def triage() -> dict:
        with reach_otel.handoff("Triage", "Billing"):
            return billing()

    body = triage()
    rec.handler.hops.discard(int(body["context"]["trace_id"], 16))  # as in another process

    @reach_otel.agent(name="Tech")
    def tech() -> None:
        with reach_otel.handoff("Tech", "Billing"):
            pass
        with reach_otel.handoff("Billing", "Tech"):
            pass

    with reach_otel.attach(body):
        tech()
    assert rec.one("invoke_agent Tech").attributes["reach.hop.count"] == 2
    handoffs = {s.attributes["reach.hop.count"]: s for s in rec.spans if s.name.startswith("handoff")}
    assert sorted(handoffs) == [1, 2, 3, 4]
    assert handoffs[4].attributes["reach.loop.detected"] is True  # Billing,Tech,Billing,Tech


def test_hostile_baggage_is_bounded(rec) -> None:
    headers = {
        "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "baggage": "reach.hops=999999999999,reach.path="
        + "%2C".join(f"a{i:02d}" + "x" * 67 for i in range(40)),
    }

    @reach_otel.agent(name="Z")
    def z() -> dict:
        with reach_otel.handoff("Z", "Y"):
            return reach_otel.inject({})

    with reach_otel.attach(headers):
        out = z()
    path = baggage_path(out["baggage"])
    assert len(path) == 16
    assert all(len(name) <= 64 for name in path)
    assert rec.one("invoke_agent Z").attributes["reach.hop.count"] == 1_000_000


def baggage_path(header: str) -> list[str]:
    from urllib.parse import unquote

    entries = dict(item.split("=", 1) for item in header.split(","))
    return unquote(entries["reach.path"]).split(",")


SERVER = textwrap.dedent(
    """
    import json, sys
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    import reach_otel

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    reach_otel.init(service_name="data-agent", tracer_provider=provider, exporter=exporter)

    @reach_otel.agent(name="DataAgent")
    def data_agent(params):
        return {"rows": len(params)}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            with reach_otel.attach(body):
                output = data_agent(body["params"])
            self._send({"request_id": body["request_id"], "status": "ok", "output": output})

        def do_GET(self):
            spans = [
                {"name": s.name, "trace_id": format(s.context.trace_id, "032x"),
                 "parent": format(s.parent.span_id, "016x") if s.parent else None,
                 "attributes": dict(s.attributes)}
                for s in exporter.get_finished_spans()
            ]
            self._send(spans)

        def _send(self, payload):
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
    """
)


def test_real_http_hop_to_another_process(rec, tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline())  # type: ignore[union-attr]
        url = f"http://127.0.0.1:{port}"

        @reach_otel.agent(name="Gateway")
        def gateway() -> dict:
            with reach_otel.handoff("Gateway", "DataAgent", mode="delegate") as h:
                h.transition("accept")
                h.transition("start")
                body = reach_otel.inject({"request_id": "r1", "params": {"a": 1, "b": 2}, "context": {}})
                req = urllib.request.Request(
                    url + "/invoke", json.dumps(body).encode(), {"content-type": "application/json"}
                )
                with urllib.request.urlopen(req, timeout=10) as resp:
                    reply = json.loads(resp.read())
                h.transition("commit")
                return reply

        assert gateway()["output"] == {"rows": 2}
        deadline = time.monotonic() + 10
        remote: list[dict] = []
        while not remote and time.monotonic() < deadline:
            with urllib.request.urlopen(url + "/spans", timeout=10) as resp:
                remote = json.loads(resp.read())
    finally:
        proc.terminate()
        proc.wait(timeout=10)

    handoff = rec.one("handoff DataAgent")
    (data_span,) = remote
    assert data_span["name"] == "invoke_agent DataAgent"
    assert data_span["trace_id"] == format_trace_id(handoff.context.trace_id)
    assert data_span["parent"] == format_span_id(handoff.context.span_id)
    assert data_span["attributes"]["reach.hop.count"] == 1
    assert handoff.attributes["reach.handoff.status"] == "committed"

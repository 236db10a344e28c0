"""Three FastAPI agent services, each under `reach-otel run`, make one trace across all three —
and the /invoke bodies' context.trace_id equals it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import httpx
from collector_process import CollectorProcess, free_port

from reach_otel.testing.fake_llm import FakeLLMServer

MESH = Path(__file__).resolve().parents[2] / "examples" / "agent_mesh"


def start_service(role: str, port: int, env: dict[str, str]) -> subprocess.Popen[str]:
    cmd = [
        sys.executable,
        "-m",
        "reach_otel",
        "run",
        "--",
        sys.executable,
        "serve.py",
        "--role",
        role,
        "--port",
        str(port),
    ]
    proc = subprocess.Popen(cmd, cwd=MESH, env={**env, "OTEL_SERVICE_NAME": f"{role}-agent"}, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"{role} did not start")


def test_one_trace_across_three_services(tmp_path: Path) -> None:
    ports = {role: free_port() for role in ("gateway", "data", "content")}
    procs: list[subprocess.Popen[str]] = []
    with FakeLLMServer() as llm, CollectorProcess(tmp_path / "mesh.duckdb") as collector:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_"))}
        env.update(
            REACH_OTEL_AGENTS="mesh_agents:*Agent.handle",
            OTEL_EXPORTER_OTLP_ENDPOINT=collector.url,
            OPENAI_BASE_URL=llm.openai_base_url,
            OPENAI_API_KEY="test",
            MESH_HEARTBEAT_EVERY="1",
            DATA_URL=f"http://127.0.0.1:{ports['data']}",
            CONTENT_URL=f"http://127.0.0.1:{ports['content']}",
        )
        try:
            for role, port in ports.items():
                procs.append(start_service(role, port, env))
            request = {
                "request_id": "u1",
                "invoke_mode": "sync",
                "params": {"topic": "revenue"},
                "context": {},
            }
            req = urllib.request.Request(
                f"http://127.0.0.1:{ports['gateway']}/invoke",
                json.dumps(request).encode(),
                {"content-type": "application/json"},
            )
            with urllib.request.urlopen(req, timeout=20) as resp:
                reply = json.loads(resp.read())
            assert reply["status"] == "ok"
            assert reply["output"]["answer"].startswith("echo: summarise 2 rows")
            deadline = time.monotonic() + 30
            found: dict[str, Any] = {}
            while time.monotonic() < deadline:
                traces = collector.get("/api/traces", agent="GatewayAgent")["traces"]
                if traces:
                    found = collector.get(f"/api/traces/{traces[0]['trace_id']}")
                    if {s["service"] for s in found["spans"]} >= {
                        "gateway-agent",
                        "data-agent",
                        "content-agent",
                    }:
                        break
                time.sleep(0.3)
            registered = {a["agent_id"]: a["status"] for a in collector.get("/api/agents")["agents"]}
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait(timeout=15)

    assert registered == {"GatewayAgent": "live", "DataAgent": "live", "ContentAgent": "live"}
    spans = found["spans"]
    trace_id = found["trace_id"]
    assert {s["service"] for s in spans} == {"gateway-agent", "data-agent", "content-agent"}
    assert len(found["roots"]) == 1
    for hop in reply["output"]["hops"]:
        assert hop["seen_trace_id"] == trace_id  # the /invoke body's context.trace_id
    agents = {s["attributes"]["gen_ai.agent.name"]: s for s in spans if s["name"].startswith("invoke_agent")}
    assert set(agents) == {"GatewayAgent", "DataAgent", "ContentAgent"}
    servers = [s for s in spans if s["kind"] == "SERVER"]
    assert len(servers) == 3  # one server span per service: the framework's own, continued
    ids = {s["span_id"]: s for s in spans}

    def server_of(span: dict[str, Any]) -> dict[str, Any]:
        while span["kind"] != "SERVER":  # the framework may add its own operation spans between
            span = ids[span["parent_span_id"]]
        return span

    data_server = server_of(agents["DataAgent"])
    assert data_server["service"] == "data-agent"
    assert ids[data_server["parent_span_id"]]["kind"] == "CLIENT"
    assert ids[data_server["parent_span_id"]]["service"] == "gateway-agent"
    chat = next(s for s in spans if s["name"] == "chat fake-model")
    assert chat["parent_span_id"] == agents["ContentAgent"]["span_id"]

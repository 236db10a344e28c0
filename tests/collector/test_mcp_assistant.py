"""`reach-otel mcp`: the MCP server over a live collector's API, driven by the mcp SDK's own client over
stdio and streamable HTTP, against a collector subprocess fed real OTLP on loopback."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from collector_helpers import multi_agent_trace
from collector_process import CollectorProcess, free_port
from mcp import Client, StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp.client.streamable_http import streamable_http_client
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from reach_collector.cli.assistant import compact_tree
from reach_collector.cli.render import event_line

TOOLS = {
    "search_traces",
    "get_trace",
    "why",
    "golden_metrics",
    "agent_metrics",
    "topology",
    "alerts",
    "who_is_on_call",
}

CONFIG = """
time_zone: UTC
alerting:
  interval: 1s
  rules:
    ReachSuccessRateLow: {for: 0s, min_calls: 3}
users:
  alice: {webhook: "http://127.0.0.1:9/page"}
  bob: {webhook: "http://127.0.0.1:9/page"}
schedules:
  primary:
    layers:
      - {name: weekly, start: 2026-01-05T09:00:00, length: 1w, members: [alice, bob]}
routing:
  P0: {notify: {users: [alice]}}
  P1: {notify: {users: [alice]}}
"""


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[CollectorProcess, list[str]]]:
    tmp = tmp_path_factory.mktemp("mcp-assistant")
    config = tmp / "reach.yaml"
    config.write_text(CONFIG)
    with CollectorProcess(tmp / "traces.duckdb", "--config", str(config)) as collector:
        endpoint = collector.url + "/v1/traces"  # a new exporter a trace: each provider shuts its own
        ids = [
            multi_agent_trace(OTLPSpanExporter(endpoint=endpoint), fail_billing=True, loop=True)
            for _ in range(3)
        ]
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            found = collector.get("/api/traces", limit=50)["traces"]
            firing = collector.get("/api/alerts")["alerts"]
            if {t["trace_id"] for t in found} >= set(ids) and firing:
                break
            time.sleep(0.2)
        else:
            raise AssertionError("the collector did not store the traces and raise an alert in time")
        yield collector, ids


def stdio_target(url: str, *extra: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "reach_otel", "mcp", "--url", url, *extra],
        env={**get_default_environment(), **(env or {})},
    )


def http_target(url: str, token: str) -> Any:
    """The streamable HTTP transport to ``url``, sending ``token`` as the MCP server's credential."""
    client = httpx2.AsyncClient(
        headers={"authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=300)
    )
    return streamable_http_client(url, http_client=client)


def text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def answer(result: Any) -> Any:
    assert not result.is_error, text(result)
    return result.structured_content if result.structured_content is not None else json.loads(text(result))


async def session(target: Any, calls: list[tuple[str, dict[str, Any]]]) -> tuple[set[str], list[Any]]:
    async with Client(target) as client:
        listed = await client.list_tools()
        names = {tool.name for tool in listed.tools}
        results = [await client.call_tool(name, args) for name, args in calls]
    return names, results


def test_stdio_lists_the_tools_and_each_answers_like_the_api(
    live: tuple[CollectorProcess, list[str]],
) -> None:
    collector, ids = live
    calls = [
        ("search_traces", {"agent": "BillingAgent", "errors": True, "limit": 50}),
        ("get_trace", {"trace_id": ids[0]}),
        ("golden_metrics", {"window": "1h"}),
        ("agent_metrics", {"window": "1h"}),
        ("topology", {"window": "1h"}),
        ("alerts", {}),
        ("who_is_on_call", {}),
        ("get_trace", {"trace_id": "ab" * 16}),
        ("golden_metrics", {"window": "forever"}),
        ("why", {"trace_id": ids[0]}),
        ("why", {"window": "1h", "agent": "BillingAgent"}),
    ]
    names, results = asyncio.run(session(stdio_target(collector.url), calls))
    assert names == TOOLS
    search, tree, golden, agents, graph, alerts, oncall, unknown, bad_window, cause, causes = results
    assert answer(cause) == collector.get(f"/api/traces/{ids[0]}/cause")
    window_causes = answer(causes)
    api_causes = collector.get("/api/causes", window="1h", agent="BillingAgent")
    assert window_causes["causes"] == api_causes["causes"]
    assert window_causes["failed_traces"] == api_causes["failed_traces"]

    found = {t["trace_id"] for t in answer(search)["traces"]}
    assert set(ids) <= found
    api_found = {
        t["trace_id"] for t in collector.get("/api/traces", agent="BillingAgent", status="error")["traces"]
    }
    assert found == api_found

    assert not tree.is_error
    tree_text = text(tree)
    assert tree_text.startswith(f"trace {ids[0]}: ")
    assert "TriageAgent" in tree_text and "BillingAgent" in tree_text
    assert "⇢ handoff TriageAgent → BillingAgent" in tree_text
    assert "⟳ LOOP" in tree_text and "ERROR billing.InvoiceError" in tree_text
    api_trace = collector.get(f"/api/traces/{ids[0]}")
    # heading, agents, one line a span, and under a span one line per event the CLI tree marks
    marked = [e for s in api_trace["spans"] for e in s["events"] if event_line(e) is not None]
    assert marked and len(tree_text.splitlines()) == 2 + api_trace["span_count"] + len(marked)
    handoff = next(row for row in tree_text.splitlines() if "⇢ handoff TriageAgent → BillingAgent" in row)
    under = tree_text.splitlines()[tree_text.splitlines().index(handoff) + 1]
    assert (
        under
        == " " * (len(handoff) - len(handoff.lstrip()) + 2) + "⟳ loop detected TriageAgent → BillingAgent"
    )
    assert tree_text == compact_tree(api_trace)

    golden_body = answer(golden)
    assert "BillingAgent" in json.dumps(golden_body)
    assert golden_body.keys() == collector.get("/api/metrics/golden", window="1h").keys()
    assert "BillingAgent" in json.dumps(answer(agents))
    assert "TriageAgent" in json.dumps(answer(graph)) and "BillingAgent" in json.dumps(answer(graph))

    api_alerts = collector.get("/api/alerts")["alerts"]
    assert api_alerts, "the failing agent should have raised an alert"
    tool_alerts = answer(alerts)["alerts"]
    assert {a["fingerprint"] for a in tool_alerts} == {a["fingerprint"] for a in api_alerts}

    who = [(s["schedule"], s["now"], s["next"]) for s in answer(oncall)["schedules"]]
    api_who = [(s["schedule"], s["now"], s["next"]) for s in collector.get("/api/oncall")["schedules"]]
    assert who == api_who and who[0][0] == "primary" and who[0][1] in ("alice", "bob")
    assert answer(oncall)["time_zone"] == "UTC"

    assert unknown.is_error and f"trace {'ab' * 16} not found" in text(unknown)
    assert bad_window.is_error and "window" in text(bad_window)


def _wait_port(port: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else "mcp server exited"
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError("the MCP HTTP server did not start")


def test_streamable_http_serves_the_same_tools(live: tuple[CollectorProcess, list[str]]) -> None:
    collector, ids = live
    port = free_port()
    args = [sys.executable, "-m", "reach_otel", "mcp", "--url", collector.url, "--http", "--port", str(port)]
    env = {**os.environ, "REACH_MCP_TOKEN": "mcp-secret-1"}
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _wait_port(port, proc)
        calls = [("search_traces", {"limit": 50}), ("get_trace", {"trace_id": "not-a-trace"})]
        target = http_target(f"http://127.0.0.1:{port}/mcp", "mcp-secret-1")
        names, (search, malformed) = asyncio.run(session(target, calls))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
    assert names == TOOLS
    assert set(ids) <= {t["trace_id"] for t in answer(search)["traces"]}
    assert malformed.is_error and "malformed trace id" in text(malformed)


def test_an_unreachable_collector_is_a_tool_error_not_a_crash() -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    _, (result, again) = asyncio.run(
        session(stdio_target(dead), [("alerts", {}), ("who_is_on_call", {"at": "2026-02-01T10:00Z"})])
    )
    for r in (result, again):
        assert r.is_error
        assert f"cannot reach the collector at {dead}" in text(r)


def test_compact_tree_caps_long_traces() -> None:
    span = {"name": "step", "duration_ms": 1.0, "status": {"code": "UNSET"}, "attributes": {}}
    trace = {"trace_id": "cd" * 16, "span_count": 700, "roots": [dict(span) for _ in range(700)]}
    lines = compact_tree(trace, max_lines=500).splitlines()
    assert len(lines) == 1 + 500 + 1
    assert lines[-1].startswith("… 200 more span(s) left out")


def test_the_query_token_is_sent_from_the_environment_or_a_file(tmp_path: Path) -> None:
    config = tmp_path / "reach.yaml"
    config.write_text("auth: {query_token: q-secret-1}\n")
    token_file = tmp_path / "query-token"
    token_file.write_text("q-secret-1\n")
    with CollectorProcess(tmp_path / "traces.duckdb", "--config", str(config)) as collector:
        from_env = stdio_target(collector.url, env={"REACH_QUERY_TOKEN": "q-secret-1"})
        from_file = stdio_target(collector.url, "--token-file", str(token_file))
        _, (by_env,) = asyncio.run(session(from_env, [("search_traces", {})]))
        _, (by_file,) = asyncio.run(session(from_file, [("search_traces", {})]))
        _, (refused,) = asyncio.run(session(stdio_target(collector.url), [("search_traces", {})]))
    assert answer(by_env) == {"traces": []}
    assert answer(by_file) == {"traces": []}
    assert refused.is_error and "wants a query token" in text(refused)

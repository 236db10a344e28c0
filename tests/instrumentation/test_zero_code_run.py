"""An unmodified multi-agent app under `reach-otel run`, configured only by environment variables,
exports one trace per turn to a real collector: workflow > agents > chat/tool/handoff spans."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from collector_process import CollectorProcess

from reach_otel.testing.fake_llm import FakeLLMServer

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "examples" / "zero_code" / "app.py"


def env_file() -> dict[str, str]:
    lines = (APP.parent / "reach-otel.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def by_name(spans: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [s for s in spans if s["name"] == name]


def test_zero_code_app_traced_through_reach_otel_run(tmp_path: Path) -> None:
    with FakeLLMServer() as llm, CollectorProcess(tmp_path / "traces.duckdb") as collector:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_"))}
        env.update(env_file())
        env.update(
            OTEL_EXPORTER_OTLP_ENDPOINT=collector.url,
            OTEL_SERVICE_NAME="support-desk",
            OPENAI_BASE_URL=llm.openai_base_url,
            OPENAI_API_KEY="test",
        )
        out = subprocess.run(
            [sys.executable, "-m", "reach_otel", "run", "--", sys.executable, str(APP)],
            env=env,
            cwd=APP.parent,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        assert "going round in circles" in out.stdout
        assert "warning" not in out.stderr.lower(), out.stderr
        summaries = collector.wait_traces(4)
        assert len(summaries) == 4  # one trace per turn
        traces = [collector.get(f"/api/traces/{t['trace_id']}") for t in summaries]

    for trace in traces:
        spans = trace["spans"]
        (root,) = trace["roots"]
        assert root["name"] == "invoke_workflow execute_turn"
        assert root["service"] == "support-desk"
        ids = {s["span_id"]: s for s in spans}
        for span in spans:
            if span["name"].startswith(("chat ", "execute_tool ", "handoff ")):
                parent = ids[span["parent_span_id"]]
                assert parent["name"].startswith("invoke_agent "), (span["name"], parent["name"])
                if not span["name"].startswith("handoff "):
                    assert span["attributes"]["reach.agent.name"] == parent["attributes"]["gen_ai.agent.name"]

    invoice = next(t for t in traces if by_name(t["spans"], "execute_tool lookup_invoice"))
    agents = [
        s["attributes"]["gen_ai.agent.name"] for s in invoice["spans"] if s["name"].startswith("invoke_agent")
    ]
    assert agents == ["TriageAgent", "BillingAgent"]
    (handoff,) = by_name(invoice["spans"], "handoff BillingAgent")
    assert handoff["attributes"]["reach.handoff.source"] == "TriageAgent"
    assert handoff["attributes"]["gen_ai.transfer.mode"] == "pass_control"
    (billing,) = by_name(invoice["spans"], "invoke_agent BillingAgent")
    assert billing["attributes"]["reach.hop.count"] == 1
    assert billing["status"]["code"] != "ERROR"
    (triage,) = by_name(invoice["spans"], "invoke_agent TriageAgent")
    assert triage["status"]["code"] != "ERROR"  # a transfer is control flow, not a failure
    assert len(by_name(invoice["spans"], "chat fake-model")) == 3
    assert all(
        s["attributes"]["gen_ai.usage.input_tokens"] > 0 for s in by_name(invoice["spans"], "chat fake-model")
    )

    ping_pong = next(t for t in traces if len(by_name(t["spans"], "handoff BillingAgent")) > 1)
    handoffs = [s for s in ping_pong["spans"] if s["name"].startswith("handoff ")]
    assert [h["attributes"]["reach.hop.count"] for h in handoffs] == list(range(1, len(handoffs) + 1))
    assert any(h["attributes"]["reach.loop.detected"] for h in handoffs)
    events = [e["name"] for h in handoffs for e in h["events"]]
    assert "reach.loop.detected" in events
    assert "reach.hop.limit_exceeded" in events  # seven handoffs against the default max_hops=5

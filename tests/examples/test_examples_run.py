"""Every example runs on its own and its traces reach a real collector, checked through its API.

(The zero-code and agent-mesh examples are exercised in tests/instrumentation.)
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from collector_process import CollectorProcess

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(path: Path, collector: CollectorProcess) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_", "OPENAI_"))}
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = collector.url
    out = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return [line.split()[0] for line in out.stdout.splitlines() if line.strip()]


def fetch(collector: CollectorProcess, trace_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 20
    while True:
        try:
            return dict(collector.get(f"/api/traces/{trace_id}"))
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def names(trace: dict[str, Any]) -> list[str]:
    return [s["name"] for s in trace["spans"]]


def test_decorators_example(tmp_path: Path) -> None:
    with CollectorProcess(tmp_path / "decorators.duckdb") as collector:
        ok, failed, gated = run_example(EXAMPLES / "decorators" / "app.py", collector)
        first, second, third = (fetch(collector, t) for t in (ok, failed, gated))
    assert names(first) == [
        "invoke_workflow support_turn",
        "invoke_agent TriageAgent",
        "chat local-model",
        "handoff BillingAgent",
        "invoke_agent BillingAgent",
        "execute_tool query_invoice",
        "chat local-model",
    ]
    spans = {s["name"]: s for s in first["spans"]}
    assert spans["handoff BillingAgent"]["attributes"]["reach.handoff.status"] == "committed"
    assert spans["invoke_agent BillingAgent"]["attributes"]["reach.hop.count"] == 1
    assert spans["invoke_agent TriageAgent"]["attributes"]["gen_ai.conversation.id"] == "SESS-1"
    assert spans["invoke_agent BillingAgent"]["attributes"]["gen_ai.usage.input_tokens"] > 0
    failed_spans = {s["name"]: s for s in second["spans"]}
    assert failed_spans["execute_tool query_invoice"]["status"]["code"] == "ERROR"
    assert failed_spans["handoff BillingAgent"]["attributes"]["reach.handoff.status"] == "failed"
    gated_triage = next(s for s in third["spans"] if s["name"] == "invoke_agent TriageAgent")
    assert [e["name"] for e in gated_triage["events"]] == ["reach.gate.triggered"]


def test_openai_agents_example(tmp_path: Path) -> None:
    with CollectorProcess(tmp_path / "agents.duckdb") as collector:
        (trace_id,) = run_example(EXAMPLES / "openai_agents" / "app.py", collector)
        trace = fetch(collector, trace_id)
    spans = trace["spans"]
    assert len(trace["roots"]) == 1
    assert trace["roots"][0]["name"] == "invoke_workflow agents_sdk_turn"
    agents = [s["attributes"]["gen_ai.agent.name"] for s in spans if s["name"].startswith("invoke_agent")]
    assert agents == ["TriageAgent", "BillingAgent"]
    handoff = next(s for s in spans if s["name"] == "handoff BillingAgent")
    assert handoff["attributes"]["reach.handoff.source"] == "TriageAgent"
    assert (
        next(s for s in spans if s["name"] == "invoke_agent BillingAgent")["attributes"]["reach.hop.count"]
        == 1
    )
    assert "execute_tool lookup_invoice" in names(trace)
    chats = [s for s in spans if s["name"] == "chat fake-model"]
    assert len(chats) == 3  # one per model call: no duplicates from SDK processor + client patch

"""`reach-otel trace` / `traces` against a live collector holding a real multi-agent trace."""

from __future__ import annotations

import pytest
from collector_helpers import RunningCollector, multi_agent_trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from reach_otel.cli import main


@pytest.fixture(autouse=True)
def _wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("REACH_OTEL_URL", raising=False)


def test_trace_tree(collector: RunningCollector, capsys: pytest.CaptureFixture[str]) -> None:
    exporter = OTLPSpanExporter(endpoint=collector.url + "/v1/traces")
    trace_id = multi_agent_trace(exporter, fail_billing=True, loop=True)
    assert main(["trace", trace_id, "--url", collector.url]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert trace_id in lines[0]
    text = "\n".join(lines)
    for expected in (
        "invoke_workflow support_turn",
        "invoke_agent TriageAgent",
        "[BillingAgent]",
        "handoff TriageAgent → BillingAgent (committed) hop 1",
        "⟳ LOOP",
        "loop detected TriageAgent → BillingAgent",
        "ERROR billing.InvoiceError",
        "tokens 100→20",
        "execute_tool query_invoice",
    ):
        assert expected in text, expected
    # Nesting: the chat span is drawn deeper than its agent.
    agent_line = next(x for x in lines if "invoke_agent BillingAgent" in x)
    chat_line = next(x for x in lines if "chat fake-model" in x)
    assert chat_line.index("chat") > agent_line.index("invoke_agent")


def test_trace_json_and_traces_table(collector: RunningCollector, capsys: pytest.CaptureFixture[str]) -> None:
    trace_id = multi_agent_trace(OTLPSpanExporter(endpoint=collector.url + "/v1/traces"))
    assert main(["trace", trace_id, "--url", collector.url, "--json"]) == 0
    assert f'"trace_id": "{trace_id}"' in capsys.readouterr().out
    assert main(["traces", "--url", collector.url, "--agent", "BillingAgent", "--since", "1h"]) == 0
    out = capsys.readouterr().out
    assert trace_id in out and "invoke_workflow support_turn" in out
    assert main(["traces", "--url", collector.url, "--errors"]) == 0
    assert trace_id not in capsys.readouterr().out


def test_url_from_environment(
    collector: RunningCollector, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REACH_OTEL_URL", collector.url)
    assert main(["traces"]) == 0
    assert "0 trace(s)" in capsys.readouterr().out


def test_clear_failures(collector: RunningCollector, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "nothex", "--url", collector.url]) == 2
    assert "malformed trace id" in capsys.readouterr().err
    assert main(["trace", "ab" * 16, "--url", collector.url]) == 1
    assert "not found" in capsys.readouterr().err
    assert main(["trace", "ab" * 16, "--url", "http://127.0.0.1:9"]) == 1
    assert "cannot reach the collector" in capsys.readouterr().err
    assert main(["traces", "--url", "http://127.0.0.1:9"]) == 1
    assert main(["traces", "--url", collector.url, "--since", "someday"]) == 1
    assert "since" in capsys.readouterr().err

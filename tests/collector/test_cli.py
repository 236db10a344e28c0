"""`reach-otel trace` / `traces` against a live collector holding a real multi-agent trace."""

from __future__ import annotations

import pytest
from collector_helpers import RunningCollector, multi_agent_trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from reach_collector.cli.formats import duration, parse_zone, when, zone_label
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
    assert "no traces match" in capsys.readouterr().out


def test_clear_failures(collector: RunningCollector, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "nothex", "--url", collector.url]) == 2
    assert capsys.readouterr().err.startswith("reach-otel trace: malformed trace id")
    assert main(["trace", "ab" * 16, "--url", collector.url]) == 1
    err = capsys.readouterr().err
    assert err == f"reach-otel trace: trace {'ab' * 16} not found\n"  # no status code
    assert main(["trace", "ab" * 16, "--url", "http://127.0.0.1:9"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("reach-otel trace: cannot reach the collector at http://127.0.0.1:9 (connection")
    assert main(["traces", "--url", "http://127.0.0.1:9"]) == 1
    assert capsys.readouterr().err.startswith("reach-otel traces: cannot reach the collector")
    assert main(["traces", "--url", collector.url, "--since", "someday"]) == 1
    assert capsys.readouterr().err.startswith("reach-otel traces: since: cannot read time 'someday'")
    assert main(["traces", "--url", "127.0.0.1:4318"]) == 2  # no scheme: said, not a traceback
    assert "not a collector URL" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("ms", "shown"),
    [
        (0, "0ms"),
        (4.24, "4.2ms"),
        (850, "850ms"),
        (2400, "2.4s"),
        (42_000, "42s"),
        (59_600, "1m"),
        (900_000, "15m"),
        (920_000, "15m20s"),
        (5_400_000, "1h30m"),
        (3_599_000, "1h"),
        (172_800_000, "2d"),
        (194_400_000, "2d6h"),
        (None, "-"),
    ],
)
def test_one_duration_format(ms: float | None, shown: str) -> None:
    assert duration(ms) == shown


def test_times_in_a_zone_with_its_offset() -> None:
    shanghai = parse_zone("Asia/Shanghai")
    assert when("2026-01-05T08:10:00.123456Z", shanghai) == "2026-01-05T16:10:00+08:00"
    assert when(1_767_600_600_000_000_000, parse_zone("UTC")) == "2026-01-05T08:10:00+00:00"
    assert when("2026-07-01T12:00:00Z", parse_zone("Europe/Berlin")) == "2026-07-01T14:00:00+02:00"  # DST
    assert zone_label(shanghai) == "Asia/Shanghai (+08:00)"
    assert when(None, shanghai) == ""
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Base'"):
        parse_zone("Mars/Base")


def test_wide_terminal_puts_a_trace_on_one_line(
    collector: RunningCollector, capsys: pytest.CaptureFixture[str]
) -> None:
    trace_id = multi_agent_trace(OTLPSpanExporter(endpoint=collector.url + "/v1/traces"))
    start = collector.get("/api/traces").json()["traces"][0]["start_time"]
    assert main(["traces", "--url", collector.url, "--tz", "UTC"]) == 0
    out = capsys.readouterr().out
    (row,) = [line for line in out.splitlines() if trace_id in line]
    assert when(start, parse_zone("UTC")) in row and "BillingAgent, TriageAgent" in row
    assert all(line == line.rstrip() for line in out.splitlines())  # no trailing padding

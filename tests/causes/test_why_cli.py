"""`reach-otel why`, run as a subprocess against a real collector holding the known corpus: one
trace's origin, path and waste; a window's causes as a table that fits 80 columns, with the
summary and the top cause's examples; `--json` prints the API's body; bad input is one line on
stderr and a non-zero exit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable

import pytest
from cause_helpers import App, Collector
from corpus import Corpus, send_corpus


def _run(*argv: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns), "REACH_OTEL_TZ": "UTC"}
    return subprocess.run(
        [sys.executable, "-m", "reach_otel.cli", "why", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


@pytest.fixture
def sent(start_collector: Callable[[], Collector], apps: Callable[..., App]) -> tuple[Collector, Corpus]:
    collector = start_collector()
    return collector, send_corpus(collector, apps)


def test_one_trace(sent: tuple[Collector, Corpus]) -> None:
    collector, corpus = sent
    trace_id = corpus.tool_errors[-1]  # the oldest, which then hands off to TechSupport
    done = _run(trace_id, "--url", collector.url)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, done.stdout
    assert lines[0] == f"trace {trace_id} failed"
    assert lines[1] == "origin  tool_error query_invoice (TimeoutError)  in Billing"
    assert "        failed" in lines  # the origin's status message
    assert "path" in lines
    assert lines[lines.index("path") + 1 :][:4] == [
        "  invoke_workflow turn",
        "    └ invoke_agent Triage",
        "      └ invoke_agent Billing",
        "        └ execute_tool query_invoice",
    ]
    assert "upstream  Triage" in lines
    assert "affected  Billing, TechSupport, Triage" in lines
    assert "never ran TechSupport" in lines
    assert lines[-1].startswith("wasted    1000→100 tokens, $0.0130, ")
    fine = _run(corpus.ok[0], "--url", collector.url)
    assert fine.stdout.strip() == f"trace {corpus.ok[0]} did not fail (its root span is not ERROR)"


def test_a_window_at_80_columns(sent: tuple[Collector, Corpus]) -> None:
    collector, corpus = sent
    done = _run("--url", collector.url, "--window", "15m")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, done.stdout
    assert lines[0] == "Causes of 6 failed traces, last 15m"
    assert lines[1].startswith("50 % of failed traces start at tool query_invoice (TimeoutError) in Billing;")
    at = next(i for i, line in enumerate(lines) if line.startswith("3 "))
    assert lines[at].split() == ["3", "50%", "Billing", "query_invoice", "TechSupport", "×2", "$0.0390"]
    assert lines[at + 1].split() == ["←Triage", "tool_error", "·", "TimeoutError"]
    at = next(i for i, line in enumerate(lines) if line.split()[:3] == ["2", "33%", "Triage"])
    assert lines[at].split()[3] == "Billing" and "handoff_rejected" in lines[at + 1]
    assert lines[-3:] == [f"  {t}" for t in corpus.tool_errors]
    only = _run("--url", collector.url, "--agent", "Billing")
    assert only.stdout.splitlines()[0] == "Causes of 3 failed traces agent=Billing, last 15m"


def test_json(sent: tuple[Collector, Corpus]) -> None:
    collector, corpus = sent
    done = _run(corpus.rejected[0], "--url", collector.url, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == collector.get(f"/api/traces/{corpus.rejected[0]}/cause").json()
    window = json.loads(_run("--url", collector.url, "--json").stdout)
    assert window["failed_traces"] == 6 and window["window_s"] == 900


def test_bad_input_is_one_line_and_a_non_zero_exit(module_collector: Collector) -> None:
    cases = [
        (("not-a-trace",), 2, "malformed trace id 'not-a-trace': expected 32 hex digits"),
        (("ab" * 16, "--window", "1h"), 2, "give a TRACE_ID or --window/--agent/--service, not both"),
        (("--window", "8d"), 1, "window must be at most 7d"),
        (("--agent", ""), 1, "agent must be 1 to 256 characters"),
        (("ab" * 16,), 1, f"trace {'ab' * 16} not found"),
    ]
    for argv, code, says in cases:
        done = _run(*argv, "--url", module_collector.url)
        assert done.returncode == code, (argv, done.stderr)
        assert done.stdout == ""
        assert done.stderr.startswith("reach-otel why: ") and len(done.stderr.splitlines()) == 1, done.stderr
        assert says in done.stderr, done.stderr

"""`reach-otel metrics`: tables from a real collector; a clear non-zero exit when it is unreachable
or answers 4xx."""

from __future__ import annotations

import argparse
import json
import socket

import pytest
from metrics_helpers import Served, new_span_id, new_trace_id, span, write

from reach_collector.cli.metrics import register
from reach_otel import semconv as sc


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # rich would otherwise abbreviate names in a narrow capture


def _run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="reach-otel")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["metrics", *argv])
    return int(args.func(args))


@pytest.fixture
def populated(served: Served) -> Served:
    import time

    now = time.time_ns()
    trace, agent_id = new_trace_id(), new_span_id()
    rows = [
        span(trace, operation=sc.OP_AGENT, span_id=agent_id, end_ns=now - 10**9, agent="BillingAgent"),
        span(trace, operation=sc.OP_AGENT, end_ns=now - 2 * 10**9, agent="BillingAgent", error=True),
        span(
            trace,
            operation=sc.OP_CHAT,
            parent=agent_id,
            end_ns=now - 3 * 10**9,
            agent="BillingAgent",
            model="fake-model",
            input_tokens=1000,
            output_tokens=100,
        ),
    ]
    write(served.store, rows)  # the store's own write path (the collector's writer is idle)
    return served


def test_golden_table(populated: Served, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("--url", populated.url, "--window", "5m", "--by", "agent") == 0
    out = capsys.readouterr().out
    assert "BillingAgent" in out and "50.0%" in out and "Golden metrics by agent" in out


def test_agents_table(populated: Served, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("--url", populated.url, "--agents") == 0
    out = capsys.readouterr().out
    assert "handoff efficiency" in out and "BillingAgent" in out and "$0.0012" in out


def test_json(populated: Served, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("--url", populated.url, "--by", "model", "--json") == 0
    body = json.loads(capsys.readouterr().out)
    assert [(g["key"], g["calls"]) for g in body["groups"]] == [("fake-model", 1)]


def test_empty_window(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("--url", served.url) == 0
    assert "no agent calls" in capsys.readouterr().out


def test_unreachable_collector(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again before the command runs: nothing listens
    assert _run("--url", f"http://127.0.0.1:{port}") == 1
    err = capsys.readouterr().err
    assert err.startswith("reach-otel metrics: cannot reach the collector")


def test_bad_window_is_reported(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("--url", served.url, "--window", "5 minutes") == 1
    err = capsys.readouterr().err
    assert err.startswith("reach-otel metrics: ") and "window must be a whole number" in err
    assert "400" not in err  # the reason in words, not the status code

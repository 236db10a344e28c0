"""`reach-otel alerts deliveries` (§12) against a real collector whose page receiver answers 500:
every failed attempt is one WARNING line, and the command lists every attempt — an 80-column table
with whole timestamps, or `--json`; `--failed` and `--fingerprint` narrow it."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from alerting_fakes import T0, FakeClock, Receiver
from alerting_live import agent_span, live_collector, otlp, wait_for

from reach_collector import cli

AGENT = "payments-reconciliation-worker-eu"  # long enough that the table must shorten it


def _cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="reach-otel")
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


def test_failed_deliveries_are_logged_and_listed(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    caplog.set_level(logging.INFO, logger="reach_collector.alerting")
    t = T0 + 600.0
    with Receiver([500, 500]) as oncall:
        doc: dict[str, Any] = {
            "alerting": {"rules": {"ReachSuccessRateLow": {"for": "0s", "min_calls": 3}}},
            "users": {"alice": {"webhook": oncall.url}},
            "routing": {"P0": {"notify": {"users": ["alice"]}}, "P1": {"notify": {"users": ["alice"]}}},
        }
        with live_collector(tmp_path / "t.duckdb", doc, alert_loop=False, clock=FakeClock(t)) as c:
            spans = [agent_span(t - 1 - i, AGENT, error=True) for i in range(5)]
            assert c.post("/v1/traces", otlp(spans)).status_code == 200
            engine = c.app.state.alerts
            engine.tick(t)  # 500
            engine.flush(t + 1.0)  # 500 again (backoff 1 s, then 2 s)
            engine.flush(t + 3.0)  # 200
            assert oncall.answered == [500, 500, 200]
            wait_for(lambda: c.store.query("SELECT count(*) FROM alert_deliveries")[0][0] == 3)
            (alert,) = c.get("/api/alerts", state="firing")["alerts"]
            fp = alert["fingerprint"]

            capsys.readouterr()
            assert _cli("alerts", "deliveries", "--url", c.url) == 0
            table = capsys.readouterr().out
            assert _cli("alerts", "deliveries", "--url", c.url, "--json") == 0
            listed = json.loads(capsys.readouterr().out)["deliveries"]
            assert _cli("alerts", "deliveries", "--url", c.url, "--json", "--failed") == 0
            failed_only = json.loads(capsys.readouterr().out)["deliveries"]
            assert _cli("alerts", "deliveries", "--url", c.url, "--json", "--fingerprint", "0" * 16) == 0
            other = json.loads(capsys.readouterr().out)["deliveries"]

    # One WARNING per failed attempt, naming the receiver's answer and what happens next.
    warnings = [r for r in caplog.records if r.getMessage().startswith("alert delivery failed:")]
    assert [r.levelno for r in warnings] == [logging.WARNING, logging.WARNING]
    assert "retrying at 2026-01-05T08:10:01Z" in warnings[0].getMessage()
    assert "retrying at 2026-01-05T08:10:03Z" in warnings[1].getMessage()
    assert all("HTTP 500" in r.getMessage() and fp in r.getMessage() for r in warnings)

    assert [(d["kind"], d["recipient"], d["attempt"], d["ok"], d["retryable"]) for d in listed] == [
        ("firing", "alice", 1, False, True),
        ("firing", "alice", 2, False, True),
        ("firing", "alice", 3, True, False),
    ]
    assert [d["time"] for d in listed] == [
        "2026-01-05T08:10:00Z",
        "2026-01-05T08:10:01Z",
        "2026-01-05T08:10:03Z",
    ]
    assert listed[0]["next_retry_at"] == "2026-01-05T08:10:01Z" and listed[0]["error"].startswith("HTTP 500")
    assert all(d["agent"] == AGENT and d["fingerprint"] == fp for d in listed)
    assert [d["attempt"] for d in failed_only] == [1, 2]
    assert other == []

    lines = table.splitlines()
    assert max(len(line) for line in lines) <= 80, table
    assert lines[0] == "3 delivery attempt(s) · times in UTC (+00:00)"  # the configured zone
    assert lines[1].split() == ["time", "alert", "agent", "kind", "to", "#", "ok"]
    rows = [line for line in lines if line.startswith("2026-")]
    # Whole timestamps, in the zone with its offset.
    assert [row.split()[0] for row in rows] == [d["time"].replace("Z", "+00:00") for d in listed]
    assert [row.split()[-1] for row in rows] == ["NO", "NO", "yes"]
    assert "ReachSuccessRateLow " in rows[0] and "payments" in rows[0]  # the agent is shortened
    reasons = [line.strip() for line in lines if line.startswith("    ")]
    assert len(reasons) == 2 and all(r.startswith("HTTP 500") for r in reasons)
    assert "retrying at 2026-01-05T08:10:01+00:00" in table


def test_deliveries_table_shortens_names_not_times() -> None:
    rows = [
        {
            "time": "2026-01-05T08:10:00Z",
            "alertname": "CheckoutErrorBudgetBurnFastAndSlowWindows",
            "agent": "x" * 40,
            "kind": "alertmanager",
            "recipient": "a-very-long-recipient-name",
            "attempt": 12,
            "ok": False,
            "error": "connection error: ConnectError: " + "refused " * 30,
            "next_retry_at": None,
        }
    ]
    text = cli.alerts.deliveries_text(rows)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "2026-01-05T08:10:00+00:00" in text and "…" in text
    assert cli.alerts.deliveries_text([]) == "no delivery attempts"

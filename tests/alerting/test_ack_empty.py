"""`POST /api/alerts/{fp}/ack` (§12): an empty body (a plain `curl -X POST`) acknowledges, so does
`{"by", "comment"}`; acking twice answers 200 with `already_acknowledged: true`; the CLI acks
without `--by`."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from alerting_fakes import T0, FakeClock
from alerting_live import Live, agent_span, live_collector, otlp, wait_for

from reach_collector import cli

DOC: dict[str, Any] = {"alerting": {"rules": {"ReachSuccessRateLow": {"for": "0s", "min_calls": 3}}}}


def _firing(c: Live, t: float, agent: str = "billing") -> str:
    spans = [agent_span(t - 1 - i, agent, error=True) for i in range(5)]
    assert c.post("/v1/traces", otlp(spans)).status_code == 200
    c.app.state.alerts.tick(t)
    (alert,) = [a for a in c.get("/api/alerts", state="firing")["alerts"] if a["labels"]["agent"] == agent]
    fp: str = alert["fingerprint"]
    return fp


def test_empty_body_acks_and_a_second_ack_says_already(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="reach_collector.alerting")
    t = T0 + 600.0
    with live_collector(tmp_path / "t.duckdb", DOC, alert_loop=False, clock=FakeClock(t)) as c:
        fp = _firing(c, t)
        url = f"{c.url}/api/alerts/{fp}/ack"
        first = httpx.post(url, timeout=10)  # no body, no content-type
        assert first.status_code == 200, first.text
        body = first.json()
        assert (body["fingerprint"], body["acknowledged_by"], body["already_acknowledged"]) == (
            fp,
            "anonymous",
            False,
        )
        assert body["alert"]["state"] == "firing" and body["alert"]["acknowledged_by"] == "anonymous"
        again = httpx.post(url, json={"by": "bob", "comment": "looking"}, timeout=10)
        assert again.status_code == 200
        assert (again.json()["already_acknowledged"], again.json()["acknowledged_by"]) == (True, "anonymous")
        (listed,) = c.get("/api/alerts", state="firing")["alerts"]
        assert listed["acknowledged_by"] == "anonymous"
        # History is written on the writer's thread, after the answer.
        wait_for(lambda: c.store.query("SELECT fingerprint, acked_by FROM alert_acks"))
        assert c.store.query("SELECT fingerprint, acked_by FROM alert_acks") == [(fp, "anonymous")]
    acks = [r for r in caplog.records if r.getMessage().startswith("alert acknowledged:")]
    assert len(acks) == 1


def test_by_and_comment_and_bad_bodies(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="reach_collector.alerting")
    t = T0 + 600.0
    with live_collector(tmp_path / "t.duckdb", DOC, alert_loop=False, clock=FakeClock(t)) as c:
        fp = _firing(c, t)
        url = f"{c.url}/api/alerts/{fp}/ack"
        for bad, word in (
            ({"by": ""}, "by"),
            ({"by": 7}, "by"),
            ({"comment": ["x"]}, "comment"),
            ([1], "object"),
        ):
            response = httpx.post(url, json=bad, timeout=10)
            assert response.status_code == 400 and word in response.json()["detail"], bad
        nope = httpx.post(url, content=b"{nope", headers={"content-type": "application/json"}, timeout=10)
        assert nope.status_code == 400
        assert httpx.post(f"{c.url}/api/alerts/0123456789abcdef/ack", timeout=10).status_code == 404
        ok = httpx.post(url, json={"by": "alice", "comment": "rolling back the deploy"}, timeout=10)
        assert ok.status_code == 200
        assert ok.json()["acknowledged_by"] == "alice" and ok.json()["comment"] == "rolling back the deploy"
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("alert acknowledged:")]
    assert "by alice" in line and "rolling back the deploy" in line


def _cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="reach-otel")
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


def test_cli_ack_needs_no_by(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli.alerts, "_login", lambda: "carol")
    t = T0 + 600.0
    with live_collector(tmp_path / "t.duckdb", DOC, alert_loop=False, clock=FakeClock(t)) as c:
        fp = _firing(c, t)
        assert _cli("alerts", "ack", fp, "--url", c.url) == 0
        assert capsys.readouterr().out.strip() == f"acknowledged {fp} by carol"
        assert _cli("alerts", "ack", fp, "--by", "dave", "--url", c.url) == 0
        assert capsys.readouterr().out.strip() == f"{fp} was already acknowledged by carol"

"""Alerting says what it does (§12): on a real collector driven by a fake clock, one log line per
firing, failed delivery, page sent, escalation, ack and resolve; and the page carries working links
to the failing traces, an ack URL, and a generatorURL over the rule's window."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from alerting_fakes import T0, FakeClock, Receiver
from alerting_live import agent_span, live_collector, otlp

LOGGER = "reach_collector.alerting"


def _doc(alice: str, mgr: str) -> dict[str, Any]:
    return {
        "alerting": {
            "rules": {
                "ReachSuccessRateLow": {"for": "0s", "window": "10m", "min_calls": 3},
                "ReachP99LatencyHigh": {"enabled": False},
                "ReachAgentHeartbeatLost": {"enabled": False},
            }
        },
        "users": {"alice": {"webhook": alice}, "mgr": {"webhook": mgr}},
        "schedules": {
            "primary": {
                "layers": [
                    {"name": "all", "start": "2026-01-01T00:00:00", "length": "1w", "members": ["alice"]}
                ]
            }
        },
        "escalation_policies": {
            "p0": {
                "steps": [
                    {"notify": {"schedule": "primary"}, "escalate_after": "1m"},
                    {"notify": {"users": ["mgr"]}},
                ]
            }
        },
        "routing": {"P0": {"escalation_policy": "p0"}, "P1": {"notify": {"users": ["alice"]}}},
    }


def _lines(caplog: pytest.LogCaptureFixture, prefix: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER and r.getMessage().startswith(prefix)]


def test_each_event_is_one_line_and_the_page_links_work(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    t = T0 + 600.0  # 08:10:00Z
    clock = FakeClock(t)
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    with (
        Receiver([500]) as alice,
        Receiver() as mgr,
        live_collector(tmp_path / "t.duckdb", _doc(alice.url, mgr.url), alert_loop=False, clock=clock) as c,
    ):
        engine = c.app.state.alerts
        spans = [agent_span(t - 1 - i, "billing", error=i < 8) for i in range(10)]
        assert c.post("/v1/traces", otlp(spans)).status_code == 200
        failing = {s["traceId"] for s, i in zip(spans, range(10), strict=True) if i < 8}

        engine.tick(t)  # fires; alice's receiver answers 500
        engine.flush(t + 1.0)  # the retry gets through
        engine.tick(t + 60.0)  # not acknowledged after 1m: escalates to mgr
        assert alice.answered == [500, 200] and len(mgr.received) == 1

        page = alice.bodies()[1]
        (alert,) = page["alerts"]
        fp = alert["fingerprint"]
        links = alert["annotations"]
        assert page["commonAnnotations"]["ack_url"] == links["ack_url"] == f"{c.url}/api/alerts/{fp}/ack"
        since = "2026-01-05T08:00:00Z"  # the 10m window before the alert became active
        assert links["traces_url"] == f"{c.url}/ui/traces?agent=billing&status=error&since={since}"
        assert links["traces_api_url"] == f"{c.url}/api/traces?agent=billing&status=error&since={since}"
        assert alert["generatorURL"] == f"{c.url}/api/metrics/golden?window=10m&by=agent"
        assert "summary" in links  # the rule's own annotations stay
        found = httpx.get(links["traces_api_url"], timeout=10).json()["traces"]
        assert {tr["trace_id"] for tr in found} == failing

        first = httpx.post(links["ack_url"], timeout=10)  # what `curl -X POST <ack_url>` sends
        second = httpx.post(links["ack_url"], timeout=10)
        assert first.status_code == 200 and first.json()["already_acknowledged"] is False
        assert second.status_code == 200 and second.json()["already_acknowledged"] is True
        engine.tick(t + 120.0)  # acknowledged: nothing more is sent
        assert (len(alice.received), len(mgr.received)) == (2, 1)
        engine.tick(t + 11 * 60.0)  # no calls in the window any more: resolves
        assert [b["status"] for b in alice.bodies()] == ["firing", "firing", "resolved"]
        assert [b["status"] for b in mgr.bodies()] == ["firing", "resolved"]

    events = {
        prefix: _lines(caplog, prefix)
        for prefix in (
            "alert firing:",
            "alert delivery failed:",
            "alert page sent:",
            "alert escalated:",
            "alert acknowledged:",
            "alert resolved:",
        )
    }
    counts = {prefix: len(records) for prefix, records in events.items()}
    assert counts == {
        "alert firing:": 1,
        "alert delivery failed:": 1,
        "alert page sent:": 4,  # firing (alice, after the retry), escalation (mgr), resolved (both)
        "alert escalated:": 1,
        "alert acknowledged:": 1,  # the second ack changes nothing and says nothing
        "alert resolved:": 1,
    }
    for prefix, records in events.items():
        for record in records:
            assert fp in record.getMessage() and "\n" not in record.getMessage()
            expected = logging.WARNING if prefix == "alert delivery failed:" else logging.INFO
            assert record.levelno == expected, record.getMessage()
    (failed,) = events["alert delivery failed:"]
    assert "HTTP 500" in failed.getMessage() and "retrying at 2026-01-05T08:10:01Z" in failed.getMessage()
    assert "agent=billing" in events["alert firing:"][0].getMessage()
    assert "by anonymous" in events["alert acknowledged:"][0].getMessage()
    assert "step 2 of 2 of policy p0 (users mgr)" in events["alert escalated:"][0].getMessage()
    sent = [r.getMessage() for r in events["alert page sent:"]]
    assert [("(firing)" in m, "to alice" in m) for m in sent[:1]] == [(True, True)]
    assert "(escalation) to mgr" in sent[1]


def test_undeliverable_and_refused_pages_are_warnings(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A user without a webhook, and a receiver answering 4xx (never retried): one WARNING each."""
    t = T0 + 600.0
    caplog.set_level(logging.INFO, logger=LOGGER)
    with Receiver([404]) as alice:
        doc: dict[str, Any] = {
            "alerting": {"rules": {"ReachSuccessRateLow": {"for": "0s", "min_calls": 3}}},
            "users": {"alice": {"webhook": alice.url}, "nobody": {}},  # a user with no webhook
            "routing": {
                "P0": {"notify": {"users": ["alice", "nobody"]}},
                "P1": {"notify": {"users": ["alice"]}},
            },
        }
        with live_collector(tmp_path / "t.duckdb", doc, alert_loop=False, clock=FakeClock(t)) as c:
            spans = [agent_span(t - 1 - i, "billing", error=True) for i in range(5)]
            assert c.post("/v1/traces", otlp(spans)).status_code == 200
            c.app.state.alerts.tick(t)
            c.app.state.alerts.flush(t + 10)
    failed = [r.getMessage() for r in _lines(caplog, "alert delivery failed:")]
    assert len(failed) == 2, failed
    assert any("to nobody" in m and "no webhook configured" in m for m in failed)
    assert any("HTTP 404" in m and "not retried (the receiver refused it)" in m for m in failed)
    assert all(r.levelno == logging.WARNING for r in _lines(caplog, "alert delivery failed:"))
    assert _lines(caplog, "alert page sent:") == []

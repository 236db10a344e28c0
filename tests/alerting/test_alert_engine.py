"""The engine's surface for the collector: tick on an injected clock, /api/alerts and
/api/oncall bodies, the state gauges, the loop's next wake-up, and building from Settings."""

from __future__ import annotations

import pytest
from alerting_fakes import MIN, T0, FakeClock, RecordingSender, failing_between

from reach_collector.alerting.config import load_alerting
from reach_collector.alerting.evaluation.engine import AlertEngine, build_engine
from reach_collector.alerting.evaluation.history import MemoryHistory
from reach_collector.alerting.notify.webhook import SendOutcome
from reach_collector.config import ConfigError, Settings


def test_alerts_body_by_state_and_gauges() -> None:
    clock = FakeClock()
    history = MemoryHistory()
    seen: list[str] = []
    eng = AlertEngine(
        load_alerting({}),
        failing_between(T0, T0 + 10 * MIN),
        sender=RecordingSender(),
        history=history,
        clock=clock,
        on_transition=[lambda t: seen.append(t.to_state.value)],
    )
    eng.tick()
    (pending,) = eng.alerts("pending")["alerts"]
    assert pending["state"] == "pending" and pending["fired_at"] is None
    assert set(pending) >= {
        "fingerprint",
        "alertname",
        "severity",
        "labels",
        "annotations",
        "state",
        "active_at",
        "fired_at",
        "resolved_at",
        "acknowledged_by",
    }
    assert eng.state_gauges() == [
        ({"alertname": "ReachSuccessRateLow", "severity": "P0", "agent": "billing"}, 1.0)
    ]
    clock.advance(5 * MIN)
    eng.tick()
    (firing,) = eng.alerts("firing")["alerts"]
    assert firing["active_at"] == "2026-01-05T08:00:00Z" and firing["fired_at"] == "2026-01-05T08:05:00Z"
    assert eng.state_gauges()[0][1] == 2.0
    clock.advance(5 * MIN)
    eng.tick()
    assert eng.alerts("firing") == {"alerts": []}
    assert eng.alerts("resolved")["alerts"][0]["resolved_at"] == "2026-01-05T08:10:00Z"
    assert eng.state_gauges()[0][1] == 0.0
    assert [t.to_state.value for t in history.transitions] == ["pending", "firing", "resolved"]
    assert seen == ["pending", "firing", "resolved"]
    with pytest.raises(ValueError, match="state: expected pending, firing or resolved"):
        eng.alerts("inactive")


def test_next_wakeup_is_the_next_evaluation_or_an_earlier_retry() -> None:
    clock = FakeClock()
    doc = {
        "users": {"alice": {"webhook": "http://rx/alice"}},
        "routing": {"P0": {"notify": {"users": ["alice"]}}},
        "alerting": {"rules": {"ReachSuccessRateLow": {"for": "0s"}}},
    }
    sender = RecordingSender([SendOutcome(True, "HTTP 503")])
    eng = AlertEngine(load_alerting(doc), failing_between(T0, T0 + MIN), sender=sender, clock=clock)
    assert eng.next_wakeup() is None
    eng.tick()
    assert eng.next_wakeup() == T0 + 1.0  # the retry comes before the next evaluation at +15 s
    clock.advance(1.0)
    eng.flush()
    assert eng.next_wakeup() == T0 + 15.0


def test_oncall_and_agents_bodies() -> None:
    doc = {
        "schedules": {
            "primary": {"layers": [{"start": "2026-01-05T00:00:00", "length": "1d", "members": ["a", "b"]}]}
        }
    }
    eng = AlertEngine(load_alerting(doc), failing_between(0, 0), sender=RecordingSender(), clock=lambda: T0)
    assert eng.oncall() == {
        "at": "2026-01-05T08:00:00Z",
        "schedules": [
            {
                "schedule": "primary",
                "time_zone": "UTC",
                "now": "a",
                "reason": "layer0",
                "next": "b",
                "next_handoff": "2026-01-06T00:00:00Z",
            }
        ],
    }
    assert eng.agents() == {"agents": []}


def test_build_engine_from_settings_names_the_file() -> None:
    settings = Settings(
        port=4999, sections={"routing": {"P0": {"escalation_policy": "nope"}}}, source="reach.yaml"
    )
    with pytest.raises(ConfigError, match=r"^reach\.yaml: routing\.P0\.escalation_policy"):
        build_engine(settings, failing_between(0, 0))
    eng = build_engine(Settings(port=4999), failing_between(0, 0), sender=RecordingSender())
    assert eng.pipeline.external_url == "http://127.0.0.1:4999"
    assert [r.name for r in eng.rules] == [
        "ReachSuccessRateLow",
        "ReachP99LatencyHigh",
        "ReachAgentHeartbeatLost",
    ]

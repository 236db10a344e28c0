"""Replay over 20 minutes of scripted history: every transition with its time, at the default
step (the evaluation interval) and at 1 minute — and nothing notified, nothing recorded."""

from __future__ import annotations

import math

import pytest
from alerting_fakes import MIN, T0, FakeClock, RecordingSender, ScriptedData

from reach_collector.alerting.config import load_alerting
from reach_collector.alerting.evaluation.build import build_rules
from reach_collector.alerting.evaluation.engine import AlertEngine
from reach_collector.alerting.evaluation.history import MemoryHistory
from reach_collector.alerting.evaluation.replay import parse_replay_request, replay
from reach_collector.alerting.inputs.data import AgentWindowStats, Heartbeat


def history() -> ScriptedData:
    """billing fails 80 % in windows ending in [2m, 12m); triage's p99 is 20 s in [5m, 15m);
    billing-1 heartbeats every 30 s except between 8m and 16m."""

    def stats(now: float, window: float) -> dict[str, AgentWindowStats]:
        m = (now - T0) / MIN
        return {
            "billing": AgentWindowStats(20, 16 if 2 <= m < 12 else 1, 300.0, "billing-svc"),
            "triage": AgentWindowStats(20, 0, 20000.0 if 5 <= m < 15 else 800.0, "triage-svc"),
        }

    def beats(now: float) -> dict[str, Heartbeat]:
        m = (now - T0) / MIN
        last = T0 + math.floor((now - T0) / 30) * 30
        if 8 <= m < 16:
            last = T0 + 8 * MIN
        return {"billing-1": Heartbeat(last, "billing-svc")}

    return ScriptedData(stats, beats)


def summary(transitions: list[dict[str, object]]) -> list[tuple[str, str, str, str]]:
    return [(str(t["time"])[11:19], str(t["alertname"]), str(t["from"]), str(t["to"])) for t in transitions]


EXPECTED_1M = [
    ("08:02:00", "ReachSuccessRateLow", "inactive", "pending"),
    ("08:05:00", "ReachP99LatencyHigh", "inactive", "pending"),
    ("08:07:00", "ReachSuccessRateLow", "pending", "firing"),  # 7 − 2 = for: 5m
    ("08:08:00", "ReachP99LatencyHigh", "pending", "firing"),  # 8 − 5 = for: 3m
    ("08:10:00", "ReachAgentHeartbeatLost", "inactive", "pending"),  # at 9:00 the age is exactly 60 s
    ("08:10:00", "ReachAgentHeartbeatLost", "pending", "firing"),  # for: 0
    ("08:12:00", "ReachSuccessRateLow", "firing", "resolved"),
    ("08:15:00", "ReachP99LatencyHigh", "firing", "resolved"),
    ("08:16:00", "ReachAgentHeartbeatLost", "firing", "resolved"),
]


def test_replay_twenty_minutes_at_one_minute_steps() -> None:
    rules = build_rules(load_alerting({}).alerting)
    result = replay(rules, history(), T0, T0 + 20 * MIN, MIN)
    body = result.to_dict()
    assert body["evaluations"] == 21 and body["errors"] == []
    assert summary(body["transitions"]) == EXPECTED_1M
    first = body["transitions"][0]
    assert first["time"] == "2026-01-05T08:02:00Z"
    assert first["severity"] == "P0"
    assert first["labels"] == {
        "alertname": "ReachSuccessRateLow",
        "severity": "P0",
        "agent": "billing",
        "service": "billing-svc",
    }


def test_engine_replay_uses_the_interval_as_default_step_and_is_pure() -> None:
    clock = FakeClock(T0 + 60 * MIN)
    sender, store = RecordingSender(), MemoryHistory()
    data = history()
    eng = AlertEngine(load_alerting({}), data, sender=sender, history=store, clock=clock)
    result = eng.replay(T0, T0 + 20 * MIN)
    assert result.steps == 20 * 4 + 1  # every 15 s
    got = summary(result.to_dict()["transitions"])
    # the same as at 1-minute steps, except the heartbeat: 75 s without one at 09:15
    expected = [t for t in EXPECTED_1M if t[1] != "ReachAgentHeartbeatLost"]
    expected[4:4] = [
        ("08:09:15", "ReachAgentHeartbeatLost", "inactive", "pending"),
        ("08:09:15", "ReachAgentHeartbeatLost", "pending", "firing"),
    ]
    expected.append(("08:16:00", "ReachAgentHeartbeatLost", "firing", "resolved"))
    assert got == expected
    # notifies no one, writes no history, leaves the live engine untouched
    assert sender.calls == [] and store.transitions == [] and store.deliveries == []
    assert eng.alerts() == {"alerts": []}


def test_replay_reports_evaluation_errors_and_keeps_state() -> None:
    data = history()
    calls = {"n": 0}
    original = data.agent_stats

    def flaky(now: float, window: float) -> dict[str, AgentWindowStats]:
        calls["n"] += 1
        if (now - T0) / MIN == 6:
            raise RuntimeError("disk hiccup")
        return dict(original(now, window))

    data.agent_stats = flaky  # type: ignore[method-assign]
    rules = build_rules(load_alerting({}).alerting)
    result = replay(rules, data, T0, T0 + 20 * MIN, MIN)
    assert summary(result.to_dict()["transitions"]) == EXPECTED_1M  # the error at 6 changed nothing
    assert {e["alertname"] for e in result.errors} == {"ReachSuccessRateLow", "ReachP99LatencyHigh"}
    assert all(e["time"] == "2026-01-05T08:06:00Z" for e in result.errors)


def test_replay_request_parsing() -> None:
    since, until, step = parse_replay_request(
        {"since": "2026-01-05T08:00:00Z", "until": str(int((T0 + 1200) * 1e9))}, 15.0
    )
    assert (since, until, step) == (T0, T0 + 1200, 15.0)
    assert (
        parse_replay_request({"since": "2026-01-05T08:00:00", "until": int(T0) * 10**9, "step": "1m"}, 15)[2]
        == 60
    )
    for bad, message in [
        ({"until": "2026-01-05T08:00:00Z"}, "since: required"),
        ({"since": "yesterday", "until": "2026-01-05T08:00:00Z"}, "since: expected an ISO-8601"),
        (
            {"since": "2026-01-05T08:00:00Z", "until": "2026-01-05T09:00:00Z", "step": "fast"},
            "step: expected",
        ),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_replay_request(bad, 15.0)


def test_replay_bounds() -> None:
    rules = build_rules(load_alerting({}).alerting)
    with pytest.raises(ValueError, match="until must not be before since"):
        replay(rules, history(), T0, T0 - 1, 15)
    with pytest.raises(ValueError, match="step must be greater than 0"):
        replay(rules, history(), T0, T0 + 60, 0)
    with pytest.raises(ValueError, match="at most"):
        replay(rules, history(), T0, T0 + 30 * 86400, 15)

"""The rules' queries: P0 success rate with min_calls (0/0 never pages), P1 p99 against per-agent
thresholds, P2 heartbeat age, the SLO burn-rate rule, and rules built from config defaults."""

from __future__ import annotations

import pytest
from alerting_fakes import MIN, T0, ScriptedData

from reach_collector.alerting.config import WORKBOOK_WINDOWS, load_alerting
from reach_collector.alerting.evaluation.build import build_rules
from reach_collector.alerting.evaluation.evaluator import Evaluator
from reach_collector.alerting.inputs.data import AgentWindowStats, Heartbeat
from reach_collector.alerting.rules import (
    BurnRateRule,
    HeartbeatLostRule,
    LatencyRule,
    SuccessRateRule,
    agent_statuses,
)


def constant(**agents: AgentWindowStats) -> ScriptedData:
    return ScriptedData(lambda now, window: dict(agents))


def test_success_rate_breaches_below_half_only() -> None:
    data = constant(
        a=AgentWindowStats(10, 6, None, "s"),  # 40 %
        b=AgentWindowStats(10, 5, None, "s"),  # 50 %: not below
        c=AgentWindowStats(10, 0, None, "s"),
    )
    samples = SuccessRateRule().samples(T0, data)
    assert [(s.labels["agent"], s.value) for s in samples] == [("a", pytest.approx(0.4))]
    assert samples[0].annotations["calls"] == "10" and samples[0].annotations["errors"] == "6"


def test_zero_calls_never_pages() -> None:
    data = constant(idle=AgentWindowStats(0, 0, None, None))
    assert SuccessRateRule().samples(T0, data) == []
    assert SuccessRateRule(min_calls=0).samples(T0, data) == []  # 0/0 even with min_calls 0
    ev = Evaluator([SuccessRateRule(for_s=0)])
    for m in range(30):
        assert ev.evaluate(T0 + m * MIN, data) == []


def test_below_min_calls_never_fires() -> None:
    data = constant(few=AgentWindowStats(4, 4, 99999.0, "s"))  # 100 % failing, but only 4 calls
    ev = Evaluator([SuccessRateRule(for_s=0), LatencyRule(for_s=0)])
    for m in range(30):
        assert ev.evaluate(T0 + m * MIN, data) == []
    five = constant(few=AgentWindowStats(5, 5, 99999.0, "s"))
    assert {t.alertname for t in ev.evaluate(T0 + 31 * MIN, five)} == {
        "ReachSuccessRateLow",
        "ReachP99LatencyHigh",
    }


def test_no_data_resolves_a_firing_alert() -> None:
    def stats(now: float, window: float) -> dict[str, AgentWindowStats]:
        return {"a": AgentWindowStats(10 if now < T0 + 2 * MIN else 2, 9 if now < T0 + 2 * MIN else 2)}

    ev = Evaluator([SuccessRateRule(for_s=0)])
    data = ScriptedData(stats)
    ev.evaluate(T0, data)
    assert [t.to_state.value for t in ev.evaluate(T0 + 2 * MIN, data)] == ["resolved"]


def test_rules_ask_for_their_window_and_share_one_query() -> None:
    data = constant(a=AgentWindowStats(10, 0, 1.0, "s"))
    Evaluator([SuccessRateRule(), LatencyRule()]).evaluate(T0, data)
    assert data.stat_calls == [(T0, 60.0)]  # the 1-minute window asked once for both rules


def test_latency_uses_per_agent_threshold_and_factor() -> None:
    rule = LatencyRule(thresholds={"billing": 2000.0})
    data = constant(
        billing=AgentWindowStats(10, 0, 3001.0, "s"),  # > 1.5 × 2000
        triage=AgentWindowStats(10, 0, 3001.0, "s"),  # default 10 000 ms threshold
        edge=AgentWindowStats(10, 0, 15000.0, "s"),  # exactly 1.5 × 10 000: not above
        unknown=AgentWindowStats(10, 0, None, "s"),
    )
    samples = rule.samples(T0, data)
    assert [s.labels["agent"] for s in samples] == ["billing"]
    assert samples[0].annotations["threshold_ms"] == "2000"


def test_latency_for_three_minutes() -> None:
    data = constant(slow=AgentWindowStats(10, 0, 20000.0, "s"))
    ev = Evaluator([LatencyRule()])
    fired = [m for m in range(0, 6) for t in ev.evaluate(T0 + m * MIN, data) if t.to_state.value == "firing"]
    assert fired == [3]


def test_heartbeat_lost_after_60_seconds_and_resolves_when_it_returns() -> None:
    last = {"value": T0}

    def beats(now: float) -> dict[str, Heartbeat]:
        return {"billing-1": Heartbeat(last["value"], "billing")}

    ev = Evaluator([HeartbeatLostRule()])
    data = ScriptedData(beats=beats)
    assert ev.evaluate(T0 + 60, data) == []  # exactly 60 s: not more than 60 s
    transitions = ev.evaluate(T0 + 61, data)
    assert [t.to_state.value for t in transitions] == ["pending", "firing"]
    assert transitions[0].labels == {
        "alertname": "ReachAgentHeartbeatLost",
        "severity": "P2",
        "agent": "billing-1",
        "service": "billing",
    }
    last["value"] = T0 + 90
    assert [t.to_state.value for t in ev.evaluate(T0 + 91, data)] == ["resolved"]


def test_agent_statuses_shape() -> None:
    data = ScriptedData(beats=lambda now: {"a": Heartbeat(T0), "b": Heartbeat(T0 + 50)})
    body = agent_statuses(data, T0 + 61)
    assert body == {
        "agents": [
            {"agent_id": "a", "last_heartbeat": "2026-01-05T08:00:00Z", "status": "lost", "service": None},
            {"agent_id": "b", "last_heartbeat": "2026-01-05T08:00:50Z", "status": "live", "service": None},
        ]
    }


def burn_data(errors_by_window: dict[float, tuple[int, int]]) -> ScriptedData:
    def stats(now: float, window: float) -> dict[str, AgentWindowStats]:
        calls, errors = errors_by_window.get(window, (1000, 0))
        return {"checkout": AgentWindowStats(calls, errors, None, "shop")}

    return ScriptedData(stats)


def test_burn_rate_needs_both_windows_of_a_pair() -> None:
    rule = BurnRateRule("CheckoutBudgetBurn", objective=0.99, windows=WORKBOOK_WINDOWS)
    # 20 % errors = 20× burn over 1h and 5m: the 14.4× pair breaches
    both = burn_data({3600.0: (1000, 200), 300.0: (100, 20)})
    (sample,) = rule.samples(T0, both)
    assert sample.value == pytest.approx(20.0) and sample.annotations["windows"] == "1h/5m"
    # long window burning but the short one recovered: no alert (fast reset)
    recovered = burn_data({3600.0: (1000, 200), 300.0: (100, 0)})
    assert rule.samples(T0, recovered) == []
    # slow burn: 2 % errors = 2× over 3d and 6h breaches only the 1× pair
    slow = burn_data({259200.0: (100000, 2000), 21600.0: (10000, 200)})
    (sample,) = rule.samples(T0, slow)
    assert sample.annotations["windows"] == "3d/6h"


def test_build_rules_from_defaults_and_config() -> None:
    rules = build_rules(load_alerting({}).alerting)
    assert [(r.name, r.severity, r.for_s) for r in rules] == [
        ("ReachSuccessRateLow", "P0", 300.0),
        ("ReachP99LatencyHigh", "P1", 180.0),
        ("ReachAgentHeartbeatLost", "P2", 0.0),
    ]
    setup = load_alerting(
        {
            "alerting": {
                "thresholds": {"billing": 2000},
                "rules": {
                    "ReachSuccessRateLow": {"for": "30s", "min_calls": 2},
                    "ReachAgentHeartbeatLost": {"enabled": False},
                    "CheckoutBurn": {"type": "burn_rate", "objective": 0.995, "severity": "P0"},
                },
            }
        }
    )
    rules = build_rules(setup.alerting)
    assert [r.name for r in rules] == ["ReachSuccessRateLow", "ReachP99LatencyHigh", "CheckoutBurn"]
    assert isinstance(rules[0], SuccessRateRule) and rules[0].for_s == 30 and rules[0].min_calls == 2
    assert isinstance(rules[1], LatencyRule) and rules[1].thresholds == {"billing": 2000.0}
    assert isinstance(rules[2], BurnRateRule) and rules[2].windows == WORKBOOK_WINDOWS

"""Prometheus's alert state machine on a fake clock: pending → firing timing, silent reset,
keep_firing_for, evaluation errors, identity by label fingerprint."""

from __future__ import annotations

import pytest
from alerting_fakes import MIN, T0, ScriptedData, failing_between

from reach_collector.alerting.evaluation.evaluator import Evaluator
from reach_collector.alerting.evaluation.state import (
    Alert,
    AlertState,
    DuplicateLabelsError,
    Sample,
    advance,
    fingerprint,
)
from reach_collector.alerting.inputs.data import AgentWindowStats
from reach_collector.alerting.rules import SuccessRateRule


def run(evaluator: Evaluator, data: ScriptedData, minutes: range) -> dict[int, str]:
    """Evaluate at T0 + m minutes; return the state of billing's alert after each evaluation."""
    states = {}
    for m in minutes:
        evaluator.evaluate(T0 + m * MIN, data)
        alerts = evaluator.alerts()
        states[m] = alerts[0].state.value if alerts else "inactive"
    return states


def test_true_from_minute_1_is_pending_at_5_and_firing_at_6() -> None:
    # Condition true from the evaluation at minute 1 onwards, for: 5m, evaluations every minute.
    ev = Evaluator([SuccessRateRule()])
    states = run(ev, failing_between(T0 + 1 * MIN, T0 + 100 * MIN), range(0, 8))
    assert states == {
        0: "inactive",
        1: "pending",
        2: "pending",
        3: "pending",
        4: "pending",
        5: "pending",  # 5 − 1 = 4 min < 5 min
        6: "firing",  # 6 − 1 = 5 min ≥ 5 min: the first evaluation with now − active_at ≥ for
        7: "firing",
    }
    (alert,) = ev.alerts()
    assert alert.active_at == T0 + 1 * MIN
    assert alert.fired_at == T0 + 6 * MIN


def test_transitions_carry_times_and_states() -> None:
    ev = Evaluator([SuccessRateRule()])
    data = failing_between(T0 + 1 * MIN, T0 + 8 * MIN)
    transitions = [t for m in range(0, 10) for t in ev.evaluate(T0 + m * MIN, data)]
    assert [(t.time - T0, t.from_state.value, t.to_state.value) for t in transitions] == [
        (1 * MIN, "inactive", "pending"),
        (6 * MIN, "pending", "firing"),
        (8 * MIN, "firing", "resolved"),
    ]
    assert transitions[0].labels == {
        "alertname": "ReachSuccessRateLow",
        "severity": "P0",
        "agent": "billing",
        "service": "billing-svc",
    }


def test_one_good_evaluation_resets_pending_silently() -> None:
    bad = {1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12}  # minute 5 is good

    def stats(now: float, window: float) -> dict[str, AgentWindowStats]:
        minute = round((now - T0) / MIN)
        return {"billing": AgentWindowStats(10, 8 if minute in bad else 0, 50.0, "svc")}

    ev = Evaluator([SuccessRateRule()])
    data = ScriptedData(stats)
    transitions = [t for m in range(0, 13) for t in ev.evaluate(T0 + m * MIN, data)]
    assert [(round((t.time - T0) / MIN), t.from_state.value, t.to_state.value) for t in transitions] == [
        (1, "inactive", "pending"),
        (5, "pending", "inactive"),  # dropped, never fired, nothing resolved
        (6, "inactive", "pending"),  # a fresh active_at
        (11, "pending", "firing"),  # 11 − 6 = 5 min
    ]


@pytest.mark.parametrize(("keep_min", "resolved_at_min"), [(0, 8), (1, 9), (2, 10), (3, 11)])
def test_keep_firing_for_delays_resolution(keep_min: int, resolved_at_min: int) -> None:
    ev = Evaluator([SuccessRateRule(keep_firing_for_s=keep_min * MIN)])
    states = run(ev, failing_between(T0 + 1 * MIN, T0 + 8 * MIN), range(0, 14))
    assert states[resolved_at_min - 1] == "firing"
    assert states[resolved_at_min] == "resolved"


def test_keep_firing_for_resets_when_the_condition_returns() -> None:
    bad = set(range(1, 8)) | {9}

    def stats(now: float, window: float) -> dict[str, AgentWindowStats]:
        minute = round((now - T0) / MIN)
        return {"billing": AgentWindowStats(10, 8 if minute in bad else 0, 50.0, "svc")}

    ev = Evaluator([SuccessRateRule(keep_firing_for_s=2 * MIN)])
    states = run(ev, ScriptedData(stats), range(0, 14))
    # false at 8 (held), true at 9 (reset), false from 10: held at 10 and 11, resolved at 12
    assert [states[m] for m in range(6, 13)] == ["firing"] * 6 + ["resolved"]


def test_evaluation_error_changes_no_state() -> None:
    ev = Evaluator([SuccessRateRule()])
    data = failing_between(T0 + 1 * MIN, T0 + 100 * MIN)
    for m in range(1, 4):
        ev.evaluate(T0 + m * MIN, data)
    data.fail = True
    assert ev.evaluate(T0 + 4 * MIN, data) == []
    assert ev.health["ReachSuccessRateLow"].health == "err"
    assert ev.alerts()[0].state is AlertState.PENDING  # not dropped by the failure
    data.fail = False
    run(ev, data, range(5, 7))
    (alert,) = ev.alerts()
    assert alert.state is AlertState.FIRING and alert.fired_at == T0 + 6 * MIN
    assert ev.health["ReachSuccessRateLow"].health == "ok"


def test_error_while_firing_does_not_resolve() -> None:
    ev = Evaluator([SuccessRateRule(for_s=0)])
    data = failing_between(T0, T0 + 100 * MIN)
    ev.evaluate(T0, data)
    data.fail = True
    for m in range(1, 30):
        assert ev.evaluate(T0 + m * MIN, data) == []
    assert ev.alerts()[0].state is AlertState.FIRING


def test_for_zero_fires_in_the_evaluation_that_finds_it() -> None:
    ev = Evaluator([SuccessRateRule(for_s=0)])
    transitions = ev.evaluate(T0, failing_between(T0, T0 + MIN))
    assert [(t.from_state.value, t.to_state.value, t.time) for t in transitions] == [
        ("inactive", "pending", T0),
        ("pending", "firing", T0),
    ]


def test_resolved_alert_that_returns_is_a_new_alert_and_is_dropped_after_retention() -> None:
    ev = Evaluator([SuccessRateRule(for_s=0)])
    ev.evaluate(T0, failing_between(T0, T0 + MIN))
    ev.evaluate(T0 + MIN, failing_between(T0, T0 + MIN))
    assert ev.alerts()[0].state is AlertState.RESOLVED
    again = ev.evaluate(T0 + 2 * MIN, failing_between(T0, T0 + 3 * MIN))
    assert [t.to_state.value for t in again] == ["pending", "firing"]
    assert ev.alerts()[0].active_at == T0 + 2 * MIN
    quiet = ScriptedData()
    ev.evaluate(T0 + 3 * MIN, quiet)
    ev.evaluate(T0 + 18 * MIN, quiet)  # 15 min after resolution: still retained
    assert len(ev.alerts()) == 1
    ev.evaluate(T0 + 19 * MIN, quiet)
    assert ev.alerts() == []


def test_value_and_annotations_follow_the_latest_evaluation() -> None:
    def stats(now: float, window: float) -> dict[str, AgentWindowStats]:
        errors = 6 if now < T0 + MIN else 9
        return {"billing": AgentWindowStats(10, errors, 50.0, "svc")}

    ev = Evaluator([SuccessRateRule()])
    data = ScriptedData(stats)
    ev.evaluate(T0, data)
    fp = ev.alerts()[0].fingerprint
    ev.evaluate(T0 + MIN, data)
    (alert,) = ev.alerts()
    assert alert.fingerprint == fp  # identity is the label set, not the value
    assert alert.value == pytest.approx(0.1)
    assert "10.0%" in alert.annotations["summary"]


def test_fingerprint_is_alertmanagers_fnv1a_of_sorted_labels() -> None:
    assert fingerprint({}) == "cbf29ce484222325"  # FNV-1a 64 offset basis, empty label set
    a = fingerprint({"alertname": "X", "agent": "billing"})
    assert a == fingerprint({"agent": "billing", "alertname": "X"})
    assert a != fingerprint({"alertname": "X", "agent": "billinG"})
    assert len(a) == 16 and int(a, 16) >= 0
    # prometheus/common's own signature test vector
    assert (
        int(fingerprint({"name": "garland, briggs", "fear": "love is not enough"}), 16) == 5799056148416392346
    )


def test_duplicate_label_sets_are_an_error_that_changes_nothing() -> None:
    active: dict[str, Alert] = {}
    samples = [Sample({"agent": "a"}, 1.0, {}), Sample({"agent": "a"}, 2.0, {})]
    with pytest.raises(DuplicateLabelsError):
        advance(active, samples, T0, alertname="X", severity="P0", for_s=0)
    assert active == {}


def test_empty_label_values_are_dropped() -> None:
    active: dict[str, Alert] = {}
    advance(
        active, [Sample({"agent": "a", "service": ""}, 1.0, {})], T0, alertname="X", severity="P2", for_s=0
    )
    (alert,) = active.values()
    assert alert.labels == {"agent": "a", "alertname": "X", "severity": "P2"}

"""Pages grouped as Alertmanager groups them, on a fake clock: ``alerting.group_by`` (default
``[alertname]``), ``group_wait`` (default 0s: the alerts one evaluation fires are one message at
once) and ``group_interval`` (default 1m: a group's later firings and resolves join its next
message, at most one a minute); the keys validated like the others."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from alerting_fakes import T0, FakeClock, RecordingSender, ScriptedData

from reach_collector.alerting.config import load_alerting
from reach_collector.alerting.evaluation.engine import AlertEngine
from reach_collector.alerting.inputs.data import AgentWindowStats
from reach_collector.config import ConfigError


class Agents:
    """Who fails (8 of 10 calls) and who is slow, changed as the test goes."""

    def __init__(self) -> None:
        self.failing: set[str] = set()
        self.slow: set[str] = set()

    def data(self) -> ScriptedData:
        def stats(now: float, window: float) -> Mapping[str, AgentWindowStats]:
            return {
                a: AgentWindowStats(
                    10, 8 if a in self.failing else 0, 30000.0 if a in self.slow else 100.0, "svc"
                )
                for a in ("a", "b", "c", "d")
            }

        return ScriptedData(stats)


def _engine(agents: Agents, clock: FakeClock, **alerting: Any) -> tuple[AlertEngine, RecordingSender]:
    doc = {
        "alerting": {
            "rules": {"ReachSuccessRateLow": {"for": "0s"}, "ReachP99LatencyHigh": {"for": "0s"}},
            **alerting,
        },
        "users": {"alice": {"webhook": "http://rx/alice"}},
        "routing": {"P0": {"notify": {"users": ["alice"]}}, "P1": {"notify": {"users": ["alice"]}}},
    }
    sender = RecordingSender()
    return AlertEngine(load_alerting(doc), agents.data(), sender=sender, clock=clock), sender


def _sent(sender: RecordingSender) -> list[tuple[str, str, list[str]]]:
    return [
        (body["status"], body["recipient"]["reason"], sorted(a["labels"]["agent"] for a in body["alerts"]))
        for _, body in sender.calls
    ]


def test_defaults() -> None:
    a = load_alerting({}).alerting
    assert (a.group_by, a.group_wait_s, a.group_interval_s, a.registry_per_minute) == (
        ("alertname",),
        0,
        60,
        30,
    )
    b = load_alerting(
        {"alerting": {"group_by": ["alertname", "agent"], "group_wait": "30s", "group_interval": "5m"}}
    ).alerting
    assert (b.group_by, b.group_wait_s, b.group_interval_s) == (("alertname", "agent"), 30, 300)


@pytest.mark.parametrize(
    ("alerting", "message"),
    [
        ({"group_by": "alertname"}, "alerting.group_by: expected a list of label names"),
        ({"group_by": ["alert-name"]}, "alerting.group_by: expected a list of label names"),
        ({"group_by": ["...", "agent"]}, "alerting.group_by: expected a list of label names"),
        ({"group_wait": "soon"}, "alerting.group_wait: expected a duration"),
        ({"group_interval": "-1m"}, "alerting.group_interval:"),
        ({"registry_per_minute": 0}, "alerting.registry_per_minute: expected a whole number"),
        ({"registry_per_minute": True}, "alerting.registry_per_minute: expected a whole number"),
        ({"group": ["alertname"]}, "alerting.group: unknown key"),
    ],
)
def test_bad_values_name_the_key(alerting: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_alerting({"alerting": alerting})
    assert str(caught.value).startswith(message), str(caught.value)


def test_later_firings_join_the_groups_next_message_a_group_interval_on() -> None:
    agents, clock = Agents(), FakeClock()
    eng, sender = _engine(agents, clock)
    agents.failing |= {"a", "b"}
    eng.tick(T0)
    assert _sent(sender) == [("firing", "firing", ["a", "b"])]  # one evaluation, one message
    agents.failing.add("c")
    for s in (15, 30, 45):
        eng.tick(T0 + s)
        assert eng.next_wakeup() == T0 + s + 15  # the next evaluation; c is held until T0 + 60
    assert eng.pipeline.next_due() == T0 + 60
    assert len(sender.calls) == 1
    eng.tick(T0 + 60)
    assert _sent(sender)[1:] == [("firing", "firing", ["c"])]  # what is owed: c alone
    agents.failing -= {"a"}
    eng.tick(T0 + 120)
    agents.failing -= {"b"}
    eng.tick(T0 + 135)  # b's resolve waits for the group's next message
    assert _sent(sender)[2:] == [("resolved", "resolved", ["a"])]
    eng.tick(T0 + 180)
    assert _sent(sender)[3:] == [("resolved", "resolved", ["b"])]


def test_each_alertname_is_a_group_of_its_own() -> None:
    agents, clock = Agents(), FakeClock()
    eng, sender = _engine(agents, clock)
    agents.failing |= {"a"}
    agents.slow |= {"b", "c"}
    eng.tick(T0)
    groups = sorted((body["groupLabels"]["alertname"], len(body["alerts"])) for _, body in sender.calls)
    assert groups == [("ReachP99LatencyHigh", 2), ("ReachSuccessRateLow", 1)]


def test_group_wait_holds_a_new_groups_first_message_to_collect_more() -> None:
    agents, clock = Agents(), FakeClock()
    eng, sender = _engine(agents, clock, group_wait="30s")
    agents.failing |= {"a"}
    eng.tick(T0)
    agents.failing |= {"b"}
    eng.tick(T0 + 15)
    assert sender.calls == [] and eng.next_wakeup() == T0 + 30
    eng.tick(T0 + 30)
    assert _sent(sender) == [("firing", "firing", ["a", "b"])]


def test_grouping_by_every_label_sends_one_message_per_alert() -> None:
    agents, clock = Agents(), FakeClock()
    eng, sender = _engine(agents, clock, group_by=["..."])
    agents.failing |= {"a", "b", "c"}
    eng.tick(T0)
    assert sorted(_sent(sender)) == [("firing", "firing", [x]) for x in ("a", "b", "c")]
    assert all(
        set(body["groupLabels"]) == {"alertname", "severity", "agent", "service"} for _, body in sender.calls
    )

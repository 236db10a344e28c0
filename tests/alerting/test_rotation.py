"""On-call rotation: weekly members across hand-offs, overrides, layer priority, DST-correct
wall-clock hand-offs, the next hand-off and the /api/oncall body."""

from __future__ import annotations

from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import yaml

from reach_collector.alerting.config import load_alerting
from reach_collector.alerting.oncall.rotation import (
    Layer,
    Override,
    Schedule,
    next_handoff,
    on_call,
    oncall_report,
)


def utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


def local(text: str, zone: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(zone)).timestamp()


WEEK = 7 * 86400.0
WEEKLY = Layer("weekly", datetime(2026, 1, 5, 9), WEEK, ("alice", "bob", "carol"))


def test_member_by_week_across_several_handoffs() -> None:
    s = Schedule("primary", (WEEKLY,))
    expected = [
        ("2026-01-05T09:00:00", "alice"),
        ("2026-01-12T08:59:59", "alice"),
        ("2026-01-12T09:00:00", "bob"),
        ("2026-01-18T23:00:00", "bob"),
        ("2026-01-19T09:00:00", "carol"),
        ("2026-01-26T09:00:00", "alice"),  # wraps: floor(3 weeks) mod 3 = 0
        ("2026-02-02T10:00:00", "bob"),
        ("2026-12-28T09:00:00", "alice"),  # week 51 → 51 mod 3 = 0
    ]
    assert [(t, on_call(s, utc(t))) for t, _ in expected] == expected


def test_nobody_before_the_first_layer_starts() -> None:
    s = Schedule("primary", (WEEKLY,))
    assert on_call(s, utc("2026-01-05T08:59:59")) is None
    assert next_handoff(s, utc("2026-01-01T00:00:00")) == (utc("2026-01-05T09:00:00"), "alice")


def test_next_handoff_and_who_is_next() -> None:
    s = Schedule("primary", (WEEKLY,))
    assert next_handoff(s, utc("2026-01-06T12:00:00")) == (utc("2026-01-12T09:00:00"), "bob")
    assert next_handoff(s, utc("2026-01-12T09:00:00")) == (utc("2026-01-19T09:00:00"), "carol")
    single = Schedule("solo", (Layer("only", datetime(2026, 1, 5), 86400.0, ("zoe",)),))
    assert next_handoff(single, utc("2026-01-06T00:00:00")) is None  # zoe forever


def test_override_wins_over_layers() -> None:
    s = Schedule(
        "primary",
        (WEEKLY,),
        (Override("dave", datetime(2026, 2, 1), datetime(2026, 2, 3)),),
    )
    # the week of 2026-01-26 09:00 is alice's, but dave covers Feb 1–3
    assert on_call(s, utc("2026-01-31T23:59:59")) == "alice"
    assert on_call(s, utc("2026-02-01T00:00:00")) == "dave"
    assert on_call(s, utc("2026-02-02T09:30:00")) == "dave"  # bob's week started under the override
    assert on_call(s, utc("2026-02-03T00:00:00")) == "bob"
    assert next_handoff(s, utc("2026-01-31T12:00:00")) == (utc("2026-02-01T00:00:00"), "dave")
    assert next_handoff(s, utc("2026-02-01T12:00:00")) == (utc("2026-02-03T00:00:00"), "bob")


def test_later_override_beats_an_earlier_one() -> None:
    s = Schedule(
        "primary",
        (WEEKLY,),
        (
            Override("dave", datetime(2026, 2, 1), datetime(2026, 2, 5)),
            Override("erin", datetime(2026, 2, 2), datetime(2026, 2, 3)),
        ),
    )
    assert [on_call(s, utc(f"2026-02-0{d}T12:00:00")) for d in (1, 2, 3, 5)] == [
        "dave",
        "erin",
        "dave",
        "bob",
    ]


def test_later_layer_has_priority_where_it_covers() -> None:
    nights = Layer("weekend", datetime(2026, 1, 10), 86400.0, ("nora", "omar"), end=datetime(2026, 1, 12))
    s = Schedule("primary", (WEEKLY, nights))
    assert on_call(s, utc("2026-01-09T23:59:59")) == "alice"
    assert on_call(s, utc("2026-01-10T00:00:00")) == "nora"
    assert on_call(s, utc("2026-01-11T00:00:00")) == "omar"
    assert on_call(s, utc("2026-01-12T00:00:00")) == "alice"  # the higher layer ended
    assert next_handoff(s, utc("2026-01-11T12:00:00")) == (utc("2026-01-12T00:00:00"), "alice")
    # the same two layers in the other order: weekly covers everything, so it always wins
    assert on_call(Schedule("p", (nights, WEEKLY)), utc("2026-01-10T12:00:00")) == "alice"


def test_weekly_handoff_stays_at_local_wall_clock_across_spring_dst_new_york() -> None:
    zone = "America/New_York"  # DST starts Sunday 2026-03-08 02:00 local
    layer = Layer("weekly", datetime(2026, 3, 2, 9), WEEK, ("alice", "bob"))
    s = Schedule("ny", (layer,), time_zone=zone)
    assert local("2026-03-02T09:00:00", zone) == utc("2026-03-02T14:00:00")  # EST, UTC−5
    # the hand-off is Monday 09:00 EDT = 13:00Z, not 14:00Z (a 167-hour week)
    assert on_call(s, utc("2026-03-09T12:59:59")) == "alice"
    assert on_call(s, utc("2026-03-09T13:00:00")) == "bob"
    assert next_handoff(s, utc("2026-03-05T00:00:00")) == (utc("2026-03-09T13:00:00"), "bob")
    assert next_handoff(s, utc("2026-03-09T13:00:00")) == (utc("2026-03-16T13:00:00"), "alice")


def test_weekly_handoff_across_autumn_dst_new_york() -> None:
    zone = "America/New_York"  # DST ends Sunday 2026-11-01 02:00 local
    layer = Layer("weekly", datetime(2026, 10, 26, 9), WEEK, ("alice", "bob"))
    s = Schedule("ny", (layer,), time_zone=zone)
    assert on_call(s, utc("2026-11-02T13:59:59")) == "alice"  # 08:59:59 EST
    assert on_call(s, utc("2026-11-02T14:00:00")) == "bob"  # 09:00 EST (a 169-hour week)


def test_daily_handoff_across_dst_in_berlin() -> None:
    zone = "Europe/Berlin"  # 2026-03-29 02:00 CET → 03:00 CEST
    layer = Layer("daily", datetime(2026, 3, 27, 9), 86400.0, ("anna", "ben", "cora"))
    s = Schedule("eu", (layer,), time_zone=zone)
    cases = [
        ("2026-03-27T09:00:00", "anna"),
        ("2026-03-28T09:00:00", "ben"),
        ("2026-03-29T08:59:00", "ben"),
        ("2026-03-29T09:00:00", "cora"),
        ("2026-03-30T09:00:00", "anna"),
    ]
    assert [(t, on_call(s, local(t, zone))) for t, _ in cases] == cases
    assert next_handoff(s, local("2026-03-28T12:00:00", zone)) == (utc("2026-03-29T07:00:00"), "cora")


def test_twelve_hour_layer_crossing_spring_forward_keeps_wall_clock() -> None:
    zone = "America/New_York"
    layer = Layer("shifts", datetime(2026, 3, 7, 8), 12 * 3600.0, ("day", "night"))
    s = Schedule("ny", (layer,), time_zone=zone)
    assert on_call(s, local("2026-03-08T07:59:00", zone)) == "night"
    # 12 wall-clock hours after 03-07 20:00, though only 11 real hours passed
    assert on_call(s, local("2026-03-08T08:00:00", zone)) == "day"
    assert on_call(s, local("2026-03-08T20:00:00", zone)) == "night"


def test_spec_example_in_shanghai_from_yaml() -> None:
    doc = yaml.safe_load(
        """
time_zone: Asia/Shanghai
users: {alice: {webhook: "http://127.0.0.1:1/a"}, bob: {webhook: "http://127.0.0.1:1/b"}}
schedules:
  primary:
    layers:
      - {name: weekly, start: 2026-01-05T09:00:00, length: 1w, members: [alice, bob, carol]}
    overrides:
      - {user: dave, start: 2026-02-01T00:00:00, end: 2026-02-03T00:00:00}
"""
    )
    setup = load_alerting(doc)
    s = setup.schedules["primary"]
    assert s.time_zone == "Asia/Shanghai"
    assert on_call(s, utc("2026-01-05T00:59:59")) is None  # 08:59:59 in Shanghai
    assert on_call(s, utc("2026-01-05T01:00:00")) == "alice"  # 09:00 in Shanghai
    assert on_call(s, utc("2026-01-31T16:00:00")) == "dave"  # 2026-02-01 00:00 in Shanghai
    body = oncall_report(setup.schedules, utc("2026-01-06T00:00:00"))
    assert body == {
        "at": "2026-01-06T00:00:00Z",
        "schedules": [
            {
                "schedule": "primary",
                "time_zone": "Asia/Shanghai",
                "now": "alice",
                "reason": "weekly",
                "next": "bob",
                "next_handoff": "2026-01-12T01:00:00Z",
            }
        ],
    }


def test_start_with_an_offset_is_converted_into_the_zone() -> None:
    setup = load_alerting(
        {
            "time_zone": "Europe/Berlin",
            "schedules": {
                "p": {"layers": [{"start": "2026-01-05T08:00:00Z", "length": "1d", "members": ["a", "b"]}]}
            },
        }
    )
    (layer,) = setup.schedules["p"].layers
    assert layer.start == datetime(2026, 1, 5, 9)  # 08:00Z is 09:00 in Berlin in winter

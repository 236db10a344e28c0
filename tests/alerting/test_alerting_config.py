"""Validation of the alerting, users, schedules, escalation_policies and routing sections: every
§10 default, and errors that name the file, the key path and the reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reach_collector.alerting.config import (
    WORKBOOK_WINDOWS,
    AlertingConfig,
    EscalationStep,
    Route,
    Targets,
    from_settings,
    load_alerting,
)
from reach_collector.config import ConfigError, load_file


def test_defaults_are_the_spec_defaults() -> None:
    setup = load_alerting({})
    a = setup.alerting
    assert a == AlertingConfig()
    assert (a.interval_s, a.registry, dict(a.thresholds), a.repeat_s, a.alertmanager_url) == (
        15,
        None,
        {},
        1800,
        None,
    )
    sr, lat, hb = a.success_rate, a.latency, a.heartbeat
    assert (sr.for_s, sr.below, sr.window_s, sr.min_calls, sr.keep_firing_for_s) == (300, 0.5, 60, 5, 0)
    assert (
        lat.for_s,
        lat.factor,
        lat.window_s,
        lat.default_threshold_ms,
        lat.min_calls,
        lat.keep_firing_for_s,
    ) == (
        180,
        1.5,
        60,
        10000,
        5,
        0,
    )
    assert (hb.for_s, hb.after_s) == (0, 60)
    assert setup.time_zone == "UTC"
    assert dict(setup.routing) == {"P2": Route(action="deregister", page=False)}
    assert setup.warnings == ()  # no config at all: nothing to warn about
    given = load_alerting({}, source="reach.yaml")
    assert "routing.P0: no route; P0 alerts page nobody" in given.warnings


def test_full_example_round_trips() -> None:
    setup = load_alerting(
        {
            "alerting": {
                "interval": "30s",
                "registry": "http://127.0.0.1:9000/",
                "thresholds": {"billing": 2000},
                "repeat": "10m",
                "rules": {
                    "ReachSuccessRateLow": {
                        "for": "2m",
                        "below": 0.8,
                        "window": "5m",
                        "keep_firing_for": "1m",
                    },
                    "ReachP99LatencyHigh": {"factor": 2, "default_threshold_ms": 5000, "min_calls": 10},
                    "ReachAgentHeartbeatLost": {"after": "90s"},
                    "Slo": {
                        "type": "burn_rate",
                        "objective": 0.999,
                        "windows": [{"long": "1h", "short": "5m", "factor": 14.4}],
                    },
                },
            },
            "users": {"alice": {"webhook": "https://hooks.example/alice"}, "mgr": {"webhook": "http://m"}},
            "schedules": {
                "primary": {
                    "layers": [{"start": "2026-01-05T09:00:00", "length": "1w", "members": ["alice"]}]
                }
            },
            "escalation_policies": {
                "p0": {
                    "steps": [
                        {"notify": {"schedule": "primary"}, "escalate_after": "5m"},
                        {"notify": {"users": ["mgr"]}},
                    ]
                }
            },
            "routing": {
                "P0": {"escalation_policy": "p0"},
                "P1": {"notify": {"users": ["alice"]}},
                "P2": {"action": "none"},
            },
        }
    )
    a = setup.alerting
    assert a.interval_s == 30 and a.registry == "http://127.0.0.1:9000" and a.repeat_s == 600
    assert (
        a.success_rate.below == 0.8
        and a.success_rate.keep_firing_for_s == 60
        and a.success_rate.window_s == 300
    )
    assert a.latency.factor == 2 and a.latency.min_calls == 10 and a.heartbeat.after_s == 90
    (slo,) = a.burn_rates
    assert slo.objective == 0.999 and slo.windows[0] == WORKBOOK_WINDOWS[0] and slo.severity == "P1"
    assert setup.escalation_policies["p0"].steps == (
        EscalationStep(Targets(schedule="primary"), 300.0),
        EscalationStep(Targets(users=("mgr",)), None),
    )
    assert setup.routing["P2"] == Route(action=None, page=False)
    assert setup.warnings == ()


BAD: list[tuple[dict[str, Any], str]] = [
    (
        {"alerting": {"rules": {"ReachSuccessRateLow": {"for": "soon"}}}},
        "alerting.rules.ReachSuccessRateLow.for: expected a duration like",
    ),
    (
        {"alerting": {"rules": {"ReachSuccessRateLow": {"below": 1.5}}}},
        "alerting.rules.ReachSuccessRateLow.below",
    ),
    ({"alerting": {"rules": {"ReachSuccessRateLow": {"min_calls": -1}}}}, "ReachSuccessRateLow.min_calls"),
    ({"alerting": {"rules": {"ReachSuccessRateLow": {"window": "0s"}}}}, "window: must be greater than 0"),
    (
        {"alerting": {"rules": {"ReachP99LatencyHigh": {"treshold": 1}}}},
        "ReachP99LatencyHigh.treshold: unknown key",
    ),
    ({"alerting": {"rules": {"Mine": {"for": "1m"}}}}, "alerting.rules.Mine: unknown rule"),
    ({"alerting": {"rules": {"S": {"type": "burn_rate", "severity": "P5"}}}}, "alerting.rules.S.severity"),
    (
        {"alerting": {"rules": {"S": {"type": "burn_rate", "windows": [{"long": "1h"}]}}}},
        "S.windows[0].short: required",
    ),
    ({"alerting": {"interval": "0s"}}, "alerting.interval: must be greater than 0"),
    ({"alerting": {"registry": "ftp://x"}}, "alerting.registry: expected an http"),
    ({"alerting": {"thresholds": {"billing": "fast"}}}, "alerting.thresholds.billing"),
    ({"alerting": {"bogus": 1}}, "alerting.bogus: unknown key"),
    ({"users": {"alice": {"phone": "1"}}}, "users.alice.phone: unknown key"),
    ({"users": {"alice": {"webhook": "alice@example"}}}, "users.alice.webhook"),
    ({"time_zone": "Mars/Olympus"}, "time_zone: unknown time zone"),
    ({"schedules": {"p": {"time_zone": "Nowhere"}}}, "schedules.p.time_zone: unknown time zone"),
    ({"schedules": {"p": {"layers": [{"members": ["a"]}]}}}, "schedules.p.layers[0].start: required"),
    (
        {"schedules": {"p": {"layers": [{"start": "monday", "members": ["a"]}]}}},
        "schedules.p.layers[0].start",
    ),
    (
        {"schedules": {"p": {"layers": [{"start": "2026-01-05", "members": []}]}}},
        "schedules.p.layers[0].members",
    ),
    ({"schedules": {"p": {"layers": [{"start": "2026-01-05", "length": "0d", "members": ["a"]}]}}}, "length"),
    (
        {"schedules": {"p": {"overrides": [{"user": "d", "start": "2026-02-03", "end": "2026-02-01"}]}}},
        "end: must be after",
    ),
    ({"escalation_policies": {"p0": {"steps": []}}}, "escalation_policies.p0.steps: expected at least one"),
    (
        {
            "escalation_policies": {
                "p0": {"steps": [{"notify": {"users": ["a"]}}, {"notify": {"users": ["b"]}}]}
            }
        },
        "escalation_policies.p0.steps[0].escalate_after: required on every step but the last",
    ),
    (
        {"escalation_policies": {"p0": {"steps": [{"notify": {"schedule": "nope"}}]}}},
        "escalation_policies.p0.steps[0].notify.schedule: no schedule named 'nope'",
    ),
    ({"routing": {"P0": {"escalation_policy": "missing"}}}, "routing.P0.escalation_policy: no policy named"),
    ({"routing": {"P3": {"notify": {"users": ["a"]}}}}, "routing.P3: unknown severity"),
    ({"routing": {"P2": {"action": "reboot"}}}, "routing.P2.action: expected deregister or none"),
    ({"routing": {"P1": {"notify": {}}}}, "routing.P1.notify: expected a schedule or users"),
    (
        {"routing": {"P1": {"notify": {"users": ["a"]}, "page": "yes"}}},
        "routing.P1.page: expected true or false",
    ),
]


@pytest.mark.parametrize(("doc", "message"), BAD, ids=[m for _, m in BAD])
def test_bad_values_name_the_key_and_the_reason(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_alerting(doc)
    assert message in str(info.value)


def test_errors_from_a_file_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "reach.yaml"
    path.write_text("alerting:\n  rules:\n    ReachSuccessRateLow: {for: 5 minutes}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="for: expected a duration like"):
        load_file(path)  # the collector's own shape check already catches this one
    path.write_text("routing:\n  P0: {escalation_policy: p0}\n", encoding="utf-8")
    settings = load_file(path)
    with pytest.raises(ConfigError) as info:
        from_settings(settings)
    assert str(info.value).startswith(f"{path}: routing.P0.escalation_policy")


def test_settings_time_zone_is_the_default_zone_of_schedules(tmp_path: Path) -> None:
    path = tmp_path / "reach.yaml"
    path.write_text(
        "time_zone: Europe/Berlin\n"
        "schedules:\n"
        "  primary:\n"
        "    layers: [{start: 2026-01-05T09:00:00, length: 1w, members: [alice]}]\n"
        "  ny: {time_zone: America/New_York, layers: [{start: 2026-01-05, members: [bob]}]}\n",
        encoding="utf-8",
    )
    setup = from_settings(load_file(path))
    assert setup.time_zone == "Europe/Berlin"
    assert setup.schedules["primary"].time_zone == "Europe/Berlin"
    assert setup.schedules["ny"].time_zone == "America/New_York"
    assert setup.schedules["ny"].layers[0].length_s == 7 * 86400  # default length 1w

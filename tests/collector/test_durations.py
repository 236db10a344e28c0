"""The one duration parser (durations.py): the forms it reads, what it refuses and how it says so,
its length cap, and the spelling it writes, which it reads back exactly; the options that give each
caller its syntax (the Tempo API's Go durations over HTTP, the config file's bare seconds) with the
same refusals as before; and the spelling rounded for people (CLI tables, alert log lines)."""

from __future__ import annotations

import logging
import time

import pytest
from collector_helpers import RunningCollector
from hypothesis import given
from hypothesis import strategies as st

from reach_collector.alerting.evaluation.state import AlertState, Transition
from reach_collector.alerting.notify.log_lines import log_transition
from reach_collector.api.tempo import parse_duration_ms
from reach_collector.config import ConfigError, parse_duration
from reach_collector.text.durations import (
    GO_UNITS,
    MAX_CHARS,
    DurationError,
    format_duration_s,
    parse_duration_s,
)
from reach_collector.text.windows import WindowError, parse_window


@pytest.mark.parametrize(
    "text,seconds",
    [
        ("30s", 30),
        ("5m", 300),
        ("1h", 3600),
        ("7d", 604800),
        ("1w", 604800),
        ("250ms", 0.25),
        ("1.5s", 1.5),
        ("1h30m", 5400),
        ("1m 30s", 90),
        (" 5 m ", 300),
        ("100us", 1e-4),
        ("100µs", 1e-4),
        ("10ns", 1e-8),
        ("0s", 0),
    ],
)
def test_forms(text: str, seconds: float) -> None:
    assert parse_duration_s(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text", ["", "5", "m", "5x", "-1s", "1.s", ".5s", "1e3s", "5mm", "٣s", "1h-5m", "NaN"]
)
def test_refusals_name_the_field_and_the_form(text: str) -> None:
    with pytest.raises(DurationError, match=r"^step: expected a duration like 250ms, 30s, 5m"):
        parse_duration_s(text, "step")


def test_units_can_be_narrowed() -> None:
    assert parse_duration_s("1h30m", "minDuration", units=("ms", "s", "m", "h")) == 5400
    with pytest.raises(DurationError, match=r"units ms, s, m, h\)"):
        parse_duration_s("1d", "minDuration", units=("ms", "s", "m", "h"))


def test_a_long_value_is_refused_before_it_is_read() -> None:
    assert parse_duration_s("1" * (MAX_CHARS - 1) + "s") > 0
    started = time.perf_counter()
    for length in (MAX_CHARS + 1, 12_000, 1_000_000):
        with pytest.raises(DurationError, match=f"of at most {MAX_CHARS} characters"):
            parse_duration_s("1" * length, "minDuration")
    assert time.perf_counter() - started < 0.1
    with pytest.raises(DurationError) as err:
        parse_duration_s("9" * 5000 + "s", "window")
    assert len(str(err.value)) < 200  # the value is shown cut short


@pytest.mark.parametrize(
    "seconds,text",
    [(300, "5m"), (86400, "1d"), (90, "90s"), (0.25, "0.25s"), (1234567, "1234567s"), (0, "0s")],
)
def test_format(seconds: float, text: str) -> None:
    assert format_duration_s(seconds) == text


@given(st.integers(0, 10**12) | st.integers(0, 10**9).map(lambda ms: ms / 1000))
def test_what_it_writes_it_reads_back(seconds: float) -> None:
    assert parse_duration_s(format_duration_s(seconds)) == pytest.approx(seconds, rel=1e-12)


def test_windows_are_whole_seconds_of_the_same_parser() -> None:
    assert [parse_window(w) for w in ("30s", "5m", "1h", "7d", "1h30m", "1.5m")] == [
        30,
        300,
        3600,
        604800,
        5400,
        90,
    ]
    for bad in ("0m", "0.5s", "250ms", "1w", "8d", "9" * 5000 + "m"):
        with pytest.raises(WindowError, match="window must be"):
            parse_window(bad)


# --- the one parser's options: each caller's syntax, with its own refusals --------------------------


@pytest.mark.parametrize(
    "value,seconds",
    [("1.5s", 1.5), ("100ms", 0.1), ("1m30s", 90), ("100us", 1e-4), ("250µs", 2.5e-4), ("2h", 7200)],
)
def test_tempo_takes_go_durations(collector: RunningCollector, value: str, seconds: float) -> None:
    assert parse_duration_ms(value, "minDuration") == pytest.approx(seconds * 1000)
    assert parse_duration_s(value, units=GO_UNITS) == pytest.approx(seconds)
    response = collector.get("/tempo/api/search", params={"minDuration": value})
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("value", ["1d", "1w", "soon", "-1s", "1.s", "2 days"])
def test_tempo_refuses_what_go_refuses_as_the_parser_says(collector: RunningCollector, value: str) -> None:
    with pytest.raises(DurationError) as refused:
        parse_duration_s(value, "maxDuration", units=GO_UNITS)
    response = collector.get("/tempo/api/search", params={"maxDuration": value})
    assert response.status_code == 400
    assert response.json()["detail"] == str(refused.value)
    if value in ("1d", "1w"):  # a unit the parser knows but Go does not: the message says which it takes
        assert str(refused.value).endswith(f"(units ns, us, µs, ms, s, m, h); got {value!r}")


@pytest.mark.parametrize(
    "value,seconds", [("1w", 604800), ("7d", 604800), ("1h30m", 5400), ("250ms", 0.25), (12, 12), (0.5, 0.5)]
)
def test_config_takes_every_unit_and_bare_seconds(value: str | float, seconds: float) -> None:
    assert parse_duration(value, "storage.retention") == pytest.approx(seconds)
    assert parse_duration_s(value, numbers=True) == pytest.approx(seconds)
    assert parse_duration_s("1w") == 604800
    with pytest.raises(DurationError, match="got 12"):
        parse_duration_s(12)  # bare numbers only where a caller asks for them


@pytest.mark.parametrize(
    "value,message",
    [
        (True, "k: expected a duration like 30s, 5m, 1h, 7d; got True"),
        (None, "k: expected a duration like 30s, 5m, 1h, 7d; got None"),
        ([5], "k: expected a duration like 30s, 5m, 1h, 7d; got [5]"),
        ("2 days", "k: expected a duration like 30s, 5m, 1h, 7d; got '2 days'"),
        ("", "k: expected a duration like 30s, 5m, 1h, 7d; got ''"),
        (-1, "k: must not be negative"),
        (1e13, "k: expected at most 1e12 seconds; got 10000000000000.0"),
        (float("nan"), "k: expected at most 1e12 seconds; got nan"),
    ],
)
def test_config_refusals_are_the_parsers_word_for_word(value: object, message: str) -> None:
    with pytest.raises(ConfigError) as config:
        parse_duration(value, "k")
    with pytest.raises(DurationError) as parser:
        parse_duration_s(value, "k", numbers=True, form="a duration like 30s, 5m, 1h, 7d")
    assert str(config.value) == str(parser.value) == message
    assert parser.value.reason == message.removeprefix("k: ")


# --- the one formatter, rounded for people ----------------------------------------------------------


@pytest.mark.parametrize(
    "seconds,text",
    [
        (0, "0ms"),
        (0.00424, "4.2ms"),
        (0.004, "4ms"),
        (0.85, "850ms"),
        (2.4, "2.4s"),
        (5, "5s"),
        (42, "42s"),
        (59.6, "1m"),
        (900, "15m"),
        (920, "15m20s"),
        (5400, "1h30m"),
        (3599, "1h"),
        (172_800, "2d"),
        (194_400, "2d6h"),
        (-90, "-1m30s"),
    ],
)
def test_rounded_for_people(seconds: float, text: str) -> None:
    assert format_duration_s(seconds, exact=False) == text


@given(st.floats(1e-4, 1e9))
def test_the_rounded_spelling_reads_back_close(seconds: float) -> None:
    """What the tables and log lines print, the parser reads, within the rounding (3 %)."""
    assert parse_duration_s(format_duration_s(seconds, exact=False)) == pytest.approx(seconds, rel=0.03)


def test_the_alert_log_says_how_long_an_alert_lasted_in_the_one_spelling(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fired = 1_800_000_000.0
    transition = Transition(
        alertname="ReachErrors",
        severity="page",
        labels={"agent": "billing"},
        fingerprint="f1",
        from_state=AlertState.FIRING,
        to_state=AlertState.RESOLVED,
        time=fired + 5400,
        value=0.0,
        annotations={},
        active_at=fired - 60,
        fired_at=fired,
    )
    log = logging.getLogger("reach.test.durations")
    with caplog.at_level(logging.INFO, logger=log.name):
        log_transition(log, transition)
    assert caplog.messages == ["alert resolved: ReachErrors page agent=billing fp=f1 after 1h30m"]

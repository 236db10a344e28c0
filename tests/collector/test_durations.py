"""The one duration parser (durations.py): the forms it reads, what it refuses and how it says so,
its length cap, and the spelling it writes, which it reads back exactly."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reach_collector.text.durations import MAX_CHARS, DurationError, format_duration_s, parse_duration_s
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

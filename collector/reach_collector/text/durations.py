"""Durations, one parser and one formatter for every caller.

parse_duration_s reads ``250ms``, ``30s``, ``5m``, ``1h30m``, ``7d``, ``1w`` and Go's ``ns``/``us``/
``µs`` → seconds; what a caller accepts beyond or short of that is an option, not a parser of its
own: ``units`` narrows the units (GO_UNITS: the Tempo API's Go durations; WINDOW_UNITS: metric
windows), ``numbers`` takes a bare number as seconds (the config file), ``form`` names the accepted
form in the refusal.

format_duration_s writes a length: by default the exact spelling that the parser reads back
(``window=`` in alert links, the startup line); ``exact=False`` rounds it for people (the CLI's
tables, log lines): ``850ms``, ``2.4s``, ``15m``, ``1h30m``, ``2d``.

One pass over at most ``MAX_CHARS`` characters, so a hostile value costs nothing: a regex that
searches for terms (``findall``) backtracks over every digit run and is quadratic in its length.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Final

__all__ = [
    "FORM",
    "GO_UNITS",
    "MAX_CHARS",
    "MAX_SECONDS",
    "UNIT_S",
    "WINDOW_UNITS",
    "DurationError",
    "format_duration_s",
    "parse_duration_s",
]

MAX_CHARS: Final = 32  # "1h30m15s250ms" is 13; nothing real is longer
MAX_SECONDS: Final = 1e12  # a bare number of seconds (numbers=True): not 31 700 years (said as 1e12)
UNIT_S: Final = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
    "w": 604800.0,
}
GO_UNITS: Final = ("ns", "us", "µs", "ms", "s", "m", "h")  # Go's time.ParseDuration
WINDOW_UNITS: Final = ("s", "m", "h", "d")  # metric windows and steps
FORM: Final = "a duration like 250ms, 30s, 5m, 1h30m or 7d"
_DIGITS: Final = frozenset("0123456789")  # ASCII only: str.isdigit() also takes '٣' and '²'
# (unit, length in seconds), largest first: an exact length is spelt in the largest that divides
# it; a rounded length names two adjacent units at most.
_ROUNDED: Final = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


class DurationError(ValueError):
    """A duration that cannot be read: ``name: reason``, the reason naming the accepted form."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name}: {reason}")
        self.reason = reason  # without the name: for a caller that names the value its own way


def _shown(value: object) -> str:
    """The value in a refusal: a string cut at 40 characters, anything else as Python writes it."""
    if isinstance(value, str):
        return repr(value if len(value) <= 40 else value[:40] + "…")
    return f"{value!r:.60}"


def parse_duration_s(
    text: object,
    name: str = "duration",
    *,
    units: Collection[str] = UNIT_S,
    numbers: bool = False,
    form: str = FORM,
) -> float:
    """``1h30m`` → 5400.0: one or more ``<number><unit>`` terms (a number is digits with an
    optional fraction), blanks allowed around them, in ``units``; with ``numbers``, an int or float
    (not a bool) is a number of seconds from 0 to MAX_SECONDS. DurationError names ``name`` and the
    accepted ``form`` (and the units, where they are narrowed) otherwise."""
    if numbers and isinstance(text, (int, float)) and not isinstance(text, bool):
        if text < 0:
            raise DurationError(name, "must not be negative")
        if not text <= MAX_SECONDS:  # NaN and infinity too
            raise DurationError(name, f"expected at most 1e12 seconds; got {text!r:.60}")
        return float(text)
    value = text.strip() if isinstance(text, str) else ""
    if not value or len(value) > MAX_CHARS:
        longer = f" of at most {MAX_CHARS} characters" if len(value) > MAX_CHARS else ""
        raise DurationError(name, f"expected {form}{longer}; got {_shown(text)}")
    total, i, n = 0.0, 0, len(value)
    while i < n:
        start = i
        while i < n and value[i] in _DIGITS:
            i += 1
        if i > start and i < n and value[i] == ".":
            i += 1
            fraction = i
            while i < n and value[i] in _DIGITS:
                i += 1
            if i == fraction:
                start = i = n  # "1." has no fraction: reported below
        number = value[start:i]
        unit_start = i
        while i < n and value[i] not in _DIGITS and value[i] != ".":
            i += 1
        unit = value[unit_start:i].strip()
        if not number or unit not in units:
            # A caller that narrows the units says which it takes.
            narrowed = set(UNIT_S) - set(units)
            allowed = f" (units {', '.join(u for u in UNIT_S if u in units)})" if narrowed else ""
            raise DurationError(name, f"expected {form}{allowed}; got {_shown(text)}")
        total += float(number) * UNIT_S[unit]
    return total


def format_duration_s(seconds: float, *, exact: bool = True) -> str:
    """A length in seconds as text. ``exact``: the shortest spelling ``parse_duration_s`` reads back
    as exactly ``seconds``: 300 → ``5m``, 86400 → ``1d``, 90 → ``90s``, 0.25 → ``0.25s``. Otherwise
    rounded for people: ``0.4ms``, ``850ms``, ``2.4s``, ``42s``, ``15m``, ``1h30m``, ``2d6h`` (below
    a minute to two figures or whole units, above it to the smaller of two adjacent units)."""
    if not exact:
        return _rounded(seconds)
    for unit, size in _ROUNDED[:-1]:
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    if seconds == int(seconds):
        return f"{int(seconds)}s"
    return f"{seconds:.9f}".rstrip("0") + "s"


def _rounded(seconds: float) -> str:
    if seconds < 0:
        return "-" + _rounded(-seconds)
    ms = seconds * 1000
    if ms == 0:
        return "0ms"
    if ms < 9.95:
        return _figures(ms, "ms")
    if ms < 999.5:
        return f"{ms:.0f}ms"
    if seconds < 9.95:
        return _figures(seconds, "s")
    if seconds < 59.5:
        return f"{seconds:.0f}s"
    for i, (unit, size) in enumerate(_ROUNDED[:-1]):
        small_unit, small = _ROUNDED[i + 1]
        if seconds >= size - 0.5 * small:
            big, rest = divmod(round(seconds / small), size // small)  # in the smaller unit
            return f"{big}{unit}{rest}{small_unit}" if rest else f"{big}{unit}"
    return f"{seconds:.0f}s"  # pragma: no cover - the loop always returns from 59.5 s


def _figures(value: float, unit: str) -> str:
    """One decimal, left out when it is zero: ``4.2ms``, ``5s``."""
    text = f"{value:.1f}"
    return (text[:-2] if text.endswith(".0") else text) + unit

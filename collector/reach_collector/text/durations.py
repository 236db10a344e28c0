"""Duration strings, one parser for every caller (config, query lookbacks, windows, Tempo, replay):
``250ms``, ``30s``, ``5m``, ``1h30m``, ``7d``, ``1w`` and Go's ``ns``/``us``/``µs`` → seconds; and
the exact spelling of a length that it reads back (``window=`` in alert links, the startup line).

One pass over at most ``MAX_CHARS`` characters, so a hostile value costs nothing: a regex that
searches for terms (``findall``) backtracks over every digit run and is quadratic in its length.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Final

__all__ = ["FORM", "MAX_CHARS", "UNIT_S", "DurationError", "format_duration_s", "parse_duration_s"]

MAX_CHARS: Final = 32  # "1h30m15s250ms" is 13; nothing real is longer
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
FORM: Final = "a duration like 250ms, 30s, 5m, 1h30m or 7d"
_DIGITS: Final = frozenset("0123456789")  # ASCII only: str.isdigit() also takes '٣' and '²'


class DurationError(ValueError):
    """A duration string that cannot be read; the message names the field and the allowed form."""


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:40] + "…")


def parse_duration_s(text: str, name: str = "duration", *, units: Collection[str] = UNIT_S) -> float:
    """``1h30m`` → 5400.0: one or more ``<number><unit>`` terms (a number is digits with an
    optional fraction), blanks allowed around them; DurationError names ``name`` otherwise."""
    value = text.strip() if isinstance(text, str) else ""
    if not value or len(value) > MAX_CHARS:
        longer = f" of at most {MAX_CHARS} characters" if len(value) > MAX_CHARS else ""
        raise DurationError(f"{name}: expected {FORM}{longer}; got {_shown(str(text))}")
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
            allowed = ", ".join(u for u in UNIT_S if u in units)
            raise DurationError(f"{name}: expected {FORM} (units {allowed}); got {_shown(text)}")
        total += float(number) * UNIT_S[unit]
    return total


def format_duration_s(seconds: float) -> str:
    """The shortest spelling ``parse_duration_s`` reads back as exactly ``seconds``: 300 → ``5m``,
    86400 → ``1d``, 90 → ``90s``, 0.25 → ``0.25s``."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    if seconds == int(seconds):
        return f"{int(seconds)}s"
    return f"{seconds:.9f}".rstrip("0") + "s"

"""Numbers read from query strings and bodies: a length cap before the conversion, then a range,
so no value costs more than a few dozen characters of work and none overflows what it feeds."""

from __future__ import annotations

import math
from typing import Final

__all__ = ["MAX_NUMBER_CHARS", "parse_float", "parse_int"]

MAX_NUMBER_CHARS: Final = 40  # int64 is 19 digits; a float's 17 significant digits + exponent fit
_ASCII_INT: Final = frozenset("0123456789")


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:40] + "…")


def parse_int(text: str, name: str, low: int, high: int, what: str = "an integer") -> int:
    """``text`` as an integer in ``[low, high]``; ValueError naming ``name`` otherwise."""
    value = text.strip()
    body = value[1:] if value[:1] in ("-", "+") else value
    if not body or len(value) > MAX_NUMBER_CHARS or not set(body) <= _ASCII_INT:
        raise ValueError(f"{name}: expected {what} from {low} to {high}; got {_shown(text)}")
    number = int(value)
    if not low <= number <= high:
        raise ValueError(f"{name}: expected {what} from {low} to {high}; got {_shown(text)}")
    return number


def parse_float(text: str, name: str, low: float, high: float) -> float:
    """``text`` as a finite number in ``[low, high]``; ValueError naming ``name`` otherwise."""
    value = text.strip()
    try:
        number = float(value) if len(value) <= MAX_NUMBER_CHARS else math.nan
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or not low <= number <= high:
        raise ValueError(f"{name}: expected a number from {low:g} to {high:g}; got {_shown(text)}")
    return number

"""Window and step strings of the metrics API and CLI: ``30s``, ``5m``, ``1h``, ``7d`` → seconds."""

from __future__ import annotations

from typing import Final

from reach_collector.text.durations import WINDOW_UNITS, DurationError, parse_duration_s

__all__ = ["MAX_WINDOW_S", "WindowError", "parse_window"]

MAX_WINDOW_S: Final = 7 * 86400
ALLOWED: Final = "a whole number followed by s, m, h or d (e.g. 30s, 5m, 1h, 7d)"


class WindowError(ValueError):
    """A window or step string that cannot be used; the message names the allowed form."""


def parse_window(text: str, name: str = "window", *, maximum_s: int = MAX_WINDOW_S) -> int:
    """``5m`` → 300: the collector's one duration parser, held to whole seconds of at least 1 in
    these units. Raises ``WindowError`` naming the parameter and the allowed form."""
    try:
        seconds = parse_duration_s(text, name, units=WINDOW_UNITS)
    except DurationError:
        seconds = 0.0
    if seconds == 0.0 and _reads_as_zero(text):
        raise WindowError(f"{name} must be at least 1s; got {text.strip()[:40]!r}")
    if seconds < 1 or seconds != int(seconds):
        raise WindowError(f"{name} must be {ALLOWED}; got {str(text)[:40]!r}")
    if seconds > maximum_s:
        raise WindowError(f"{name} must be at most {maximum_s // 86400}d; got {text.strip()[:40]!r}")
    return int(seconds)


def _reads_as_zero(text: str) -> bool:
    """Whether ``text`` is a well-formed duration of no time at all (``0m``, ``0s``)."""
    try:
        return parse_duration_s(text, units=WINDOW_UNITS) == 0.0
    except DurationError:
        return False

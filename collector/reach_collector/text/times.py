"""The one reader of times in requests: ISO-8601, unix nanoseconds, or a lookback like ``15m``
(= now − 15m) → unix ns, its length capped and its range (0 … 2^63 − 1 ns) checked before work."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Final

from reach_collector.text.durations import DurationError, parse_duration_s

__all__ = ["MAX_NS", "MAX_TIME_CHARS", "parse_time_ns"]

MAX_TIME_CHARS: Final = 64  # '2026-01-05T08:00:00.123456+08:00' is 32; unix ns are 19 digits
MAX_NS: Final = 2**63 - 1  # the store's int64 nanoseconds


def _shown(value: object) -> str:
    text = str(value)
    return repr(text if len(text) <= 40 else text[:40] + "…")


def parse_time_ns(value: str | int, now_s: float) -> int:
    """A time bound (a string, or an int of unix ns from a JSON body) → unix ns. Raises ValueError
    with a message a user can act on; a lookback reaching before 1970 is 1970."""
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value <= MAX_NS:
            raise ValueError(f"time {_shown(value)} is out of range (unix ns from 0 to {MAX_NS})")
        return value
    if not isinstance(value, str):
        raise ValueError(f"cannot read time {_shown(value)}: use ISO-8601, unix nanoseconds, or a lookback")
    text = value.strip()
    if len(text) > MAX_TIME_CHARS:
        raise ValueError(f"time {_shown(value)} is longer than {MAX_TIME_CHARS} characters")
    if text.isascii() and text.isdigit():
        ns = int(text)
        if ns > MAX_NS:
            raise ValueError(f"time {_shown(value)} is out of range (unix ns up to {MAX_NS})")
        return ns
    try:
        return _clamp(int((now_s - parse_duration_s(text, "time")) * 1e9))
    except DurationError:
        pass
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=timezone.utc)
        return _clamp(int(stamp.timestamp() * 1_000_000) * 1000)
    except (ValueError, OverflowError, OSError):
        raise ValueError(
            f"cannot read time {_shown(value)}: use ISO-8601, unix nanoseconds, or a lookback like 15m"
        ) from None


def _clamp(ns: int) -> int:
    return max(0, min(ns, MAX_NS))

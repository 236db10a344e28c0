"""Parsing of query-string times and windows: ISO-8601, unix nanoseconds, or `15m` (= now − 15m)."""

from __future__ import annotations

import re
from datetime import datetime, timezone

_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)$")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_time_ns(value: str, now_s: float) -> int:
    """A time bound → unix ns. Raises ValueError with a message a user can act on."""
    text = value.strip()
    if text.isdigit():
        ns = int(text)
        if ns >= 2**63:
            raise ValueError(f"time {value!r} is out of range")
        return ns
    match = _RELATIVE.match(text)
    if match:
        return _clamp(int((now_s - float(match.group(1)) * _UNITS[match.group(2)]) * 1e9))
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"cannot read time {value!r}: use ISO-8601, unix nanoseconds, or a lookback like 15m"
        ) from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=timezone.utc)
    return _clamp(int(stamp.timestamp() * 1_000_000) * 1000)


def _clamp(ns: int) -> int:
    return max(0, min(ns, 2**63 - 1))

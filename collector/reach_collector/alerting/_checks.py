"""Small validators shared by the alerting config modules: each names the key path it rejects."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime, timezone
from typing import Any
from zoneinfo import ZoneInfo

from reach_collector.config_values import ConfigError, parse_duration
from reach_collector.config_values import mapping as mapping  # re-exported: the same readers everywhere
from reach_collector.config_values import only as only  # re-exported
from reach_collector.text.redact_url import redact_url


def required(section: Mapping[str, Any], key: str, names: tuple[str, ...]) -> None:
    """Each of ``names`` must be in ``section``; the error names the first that is missing."""
    for name in names:
        if name not in section:
            raise ConfigError(f"{key}.{name}: required")


def duration(spec: Mapping[str, Any], name: str, key: str, default: float, positive: bool = False) -> float:
    if name not in spec:
        return default
    seconds = parse_duration(spec[name], f"{key}.{name}")
    if seconds < 0 or (positive and seconds == 0):
        raise ConfigError(f"{key}.{name}: must be {'greater than 0' if positive else 'non-negative'}")
    return seconds


def number(spec: Mapping[str, Any], name: str, key: str, default: float, low: float, high: float) -> float:
    value = spec.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise ConfigError(f"{key}.{name}: expected a number between {low:g} and {high:g}, got {value!r}")
    return float(value)


def count(spec: Mapping[str, Any], name: str, key: str, default: int) -> int:
    value = spec.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{key}.{name}: expected a non-negative integer, got {value!r}")
    return value


def flag(spec: Mapping[str, Any], name: str, key: str, default: bool) -> bool:
    value = spec.get(name, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{key}.{name}: expected true or false, got {value!r}")
    return value


def url(value: Any, key: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        shown = redact_url(value) if isinstance(value, str) else value  # a typo may still hold a token
        raise ConfigError(f"{key}: expected an http:// or https:// URL or null, got {shown!r}")
    return value.rstrip("/")


def wall_time(value: Any, key: str, zone: str) -> datetime:
    """A start/end: naive means wall clock in ``zone``; with an offset it is converted into it."""
    if isinstance(value, datetime):
        stamp = value
    elif isinstance(value, date):
        stamp = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        try:
            stamp = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ConfigError(
                f"{key}: expected a date-time like 2026-01-05T09:00:00, got {value!r}"
            ) from None
    else:
        raise ConfigError(f"{key}: expected a date-time like 2026-01-05T09:00:00, got {value!r}")
    if stamp.tzinfo is not None:
        stamp = stamp.astimezone(timezone.utc).astimezone(ZoneInfo(zone)).replace(tzinfo=None)
    return stamp


def names(value: Any, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{key}: expected a non-empty list of names, got {value!r}")
    return tuple(value)


def list_of(value: Any, key: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(f"{key}: expected a list, got {type(value).__name__}")
    return value

"""The readers every configuration section is checked with (the collector's, its limits', the
alerting sections'): each takes a value and the key path it came from, and either returns it typed
or raises ``ConfigError`` naming that path, the value and what was expected."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reach_collector.text.durations import DurationError, parse_duration_s

__all__ = ["ConfigError", "integer", "mapping", "number", "only", "optional_str", "parse_duration"]


class ConfigError(ValueError):
    """A configuration value that cannot be used; the message names the key and the reason."""


def parse_duration(value: Any, key: str = "duration") -> float:
    """``30s`` / ``5m`` / ``1h`` / ``7d`` / ``1w`` / ``250ms`` or a number of seconds → seconds."""
    if isinstance(value, bool):
        raise ConfigError(f"{key}: expected a duration like 30s, 5m, 1h, 7d; got {value!r}")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ConfigError(f"{key}: must not be negative")
        if not value <= 1e12:  # NaN and infinity too: a number of seconds, not 31 700 years
            raise ConfigError(f"{key}: expected at most 1e12 seconds; got {value!r:.60}")
        return float(value)
    if isinstance(value, str):
        try:
            return parse_duration_s(value, key)
        except DurationError:
            pass
    raise ConfigError(f"{key}: expected a duration like 30s, 5m, 1h, 7d; got {value!r:.60}")


def mapping(value: Any, key: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{key}: expected a mapping, got {type(value).__name__}")
    for k in value:
        if not isinstance(k, str):
            raise ConfigError(f"{key}: keys must be strings, got {k!r}")
    return value


def only(section: Mapping[str, Any], key: str, allowed: set[str]) -> None:
    for name in section:
        if name not in allowed:
            raise ConfigError(f"{key}.{name}: unknown key (expected one of {', '.join(sorted(allowed))})")


def integer(value: Any, key: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{key}: expected an integer between {low} and {high}, got {value!r}")
    return value


def number(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ConfigError(f"{key}: expected a non-negative number, got {value!r}")
    return float(value)


def optional_str(value: Any, key: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{key}: expected a non-empty string or null, got {value!r}")
    return value

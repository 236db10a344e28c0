"""What an alert rule's configuration is made of, for ``alerting.config`` and for every rule module
that parses its own ``type:`` (so the rule modules need not import the config they are parsed
from): the severities, the built-in rules' names, a rule's ``severity``, and burn-rate windows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from reach_collector.alerting._checks import duration, mapping, number, only, required
from reach_collector.config import ConfigError

__all__ = [
    "HEARTBEAT",
    "LATENCY",
    "SEVERITIES",
    "SUCCESS_RATE",
    "WORKBOOK_WINDOWS",
    "BurnWindow",
    "parse_windows",
    "severity",
]

SEVERITIES: Final = ("P0", "P1", "P2")
SUCCESS_RATE: Final = "ReachSuccessRateLow"
LATENCY: Final = "ReachP99LatencyHigh"
HEARTBEAT: Final = "ReachAgentHeartbeatLost"


@dataclass(frozen=True)
class BurnWindow:
    long_s: float
    short_s: float
    factor: float


# SRE Workbook, table 5-8: 2% of a 30-day budget in 1h, 5% in 6h, 10% in 3d.
WORKBOOK_WINDOWS: Final = (
    BurnWindow(3600.0, 300.0, 14.4),
    BurnWindow(6 * 3600.0, 1800.0, 6.0),
    BurnWindow(3 * 86400.0, 6 * 3600.0, 1.0),
)


def severity(spec: Mapping[str, Any], key: str, default: str, allowed: tuple[str, ...] = SEVERITIES) -> str:
    """A rule's ``severity`` (routing is by severity; one with no route pages nobody)."""
    value = spec.get("severity", default)
    if value not in allowed:
        raise ConfigError(f"{key}.severity: expected one of {', '.join(allowed)}, got {value!r}")
    return str(value)


def parse_windows(
    spec: Mapping[str, Any], key: str, default: tuple[BurnWindow, ...]
) -> tuple[BurnWindow, ...]:
    """``windows: [{long, short, factor}, ...]`` of a burn-rate rule (default: the workbook's)."""
    if "windows" not in spec:
        return default
    if not isinstance(spec["windows"], list) or not spec["windows"]:
        raise ConfigError(f"{key}.windows: expected a non-empty list of {{long, short, factor}}")
    parsed = []
    for i, window in enumerate(spec["windows"]):
        wkey = f"{key}.windows[{i}]"
        window = mapping(window, wkey)
        only(window, wkey, {"long", "short", "factor"})
        required(window, wkey, ("long", "short", "factor"))
        parsed.append(
            BurnWindow(
                duration(window, "long", wkey, 0, positive=True),
                duration(window, "short", wkey, 0, positive=True),
                number(window, "factor", wkey, 0, 1e-9, 1e6),
            )
        )
    return tuple(parsed)

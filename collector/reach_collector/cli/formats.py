"""How the query commands print durations and times — one formatter for every table (SPEC §12):
durations as ``850ms``, ``2.4s``, ``15m``, ``1h30m``, ``2d`` (the collector's one duration
formatter, text.durations, rounded for people); times as ISO-8601 in the chosen zone with its
offset (``2026-01-05T16:00:00+08:00``), whole seconds, no spaces, so a time copies straight into
``--since``/``--until``/``--at``."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from reach_collector.text.durations import format_duration_s

__all__ = ["LOCAL", "duration", "parse_zone", "usd", "when", "zone_label"]

LOCAL = "local"  # the zone of the machine the command runs on


def duration(ms: float | None) -> str:
    """Milliseconds → ``0.4ms``, ``850ms``, ``2.4s``, ``42s``, ``15m``, ``1h30m``, ``2d``
    (text.durations, rounded for people); ``-`` for none."""
    return "-" if ms is None else format_duration_s(ms / 1000, exact=False)


def usd(value: float | None) -> str:
    """A cost in dollars to four places; ``unpriced`` where the price table names no price."""
    return "unpriced" if value is None else f"${value:.4f}"


def parse_zone(name: str) -> tzinfo:
    """An IANA zone name (``Asia/Shanghai``), ``UTC``, or ``local``; ValueError says what is wrong."""
    text = name.strip()
    if text.lower() == LOCAL:
        local = datetime.now().astimezone().tzinfo
        return local if local is not None else timezone.utc
    if text.upper() in ("UTC", "Z"):
        return timezone.utc
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown time zone {name!r}: use an IANA name like Europe/Berlin, UTC, or local"
        ) from None


def _instant(value: str | int | float) -> datetime | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):  # unix nanoseconds
        return datetime.fromtimestamp(value // 1_000_000_000, timezone.utc)
    if isinstance(value, float):  # unix seconds
        return datetime.fromtimestamp(int(value), timezone.utc)
    text = value.strip()
    if text.isdigit():
        return datetime.fromtimestamp(int(text) // 1_000_000_000, timezone.utc)
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=timezone.utc)


def when(value: str | int | float | None, zone: tzinfo) -> str:
    """An API time (ISO-8601, unix ns as int, unix seconds as float) → ``2026-01-05T16:00:00+08:00``
    in ``zone``; ``""`` for none; a value that is not a time is shown as it came."""
    if value is None or value == "":
        return ""
    stamp = _instant(value)
    if stamp is None:
        return str(value)
    return stamp.astimezone(zone).replace(microsecond=0).isoformat()


def zone_label(zone: tzinfo, at: datetime | None = None) -> str:
    """``Asia/Shanghai (+08:00)``: the zone's name and its offset now (or at ``at``)."""
    moment = (at or datetime.now(timezone.utc)).astimezone(zone)
    offset = moment.utcoffset() or timedelta(0)
    sign = "-" if offset < timedelta(0) else "+"
    minutes = abs(int(offset.total_seconds())) // 60
    shown = f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"
    name = getattr(zone, "key", None) or ("UTC" if zone is timezone.utc else moment.tzname() or shown)
    return f"{name} ({shown})"

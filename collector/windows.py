"""Window and step strings of the metrics API and CLI: ``30s``, ``5m``, ``1h``, ``7d`` → seconds."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["MAX_WINDOW_S", "WindowError", "parse_window"]

_FORM: Final = re.compile(r"^([1-9][0-9]{0,6})(s|m|h|d)$")
_UNIT_S: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_WINDOW_S: Final = 7 * 86400
ALLOWED: Final = "a whole number followed by s, m, h or d (e.g. 30s, 5m, 1h, 7d)"


class WindowError(ValueError):
    """A window or step string that cannot be used; the message names the allowed form."""


def parse_window(text: str, name: str = "window", *, maximum_s: int = MAX_WINDOW_S) -> int:
    """``5m`` → 300. Raises ``WindowError`` naming the parameter and the allowed form."""
    match = _FORM.match(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise WindowError(f"{name} must be {ALLOWED}; got {str(text)[:40]!r}")
    seconds = int(match.group(1)) * _UNIT_S[match.group(2)]
    if seconds > maximum_s:
        raise WindowError(f"{name} must be at most {maximum_s // 86400}d; got {text.strip()!r}")
    return seconds

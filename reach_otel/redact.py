"""Content capture limits and scrubbing: what may leave the process when capture is on.

Every captured string is passed through a :class:`Redactor` and then truncated per value, so the
JSON that lands on a span stays valid and carries no secrets the patterns know about.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

TRUNCATION_MARKER = "…[truncated {n} chars]"

Replacement = str | Callable[["re.Match[str]"], str]


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _card(match: re.Match[str]) -> str:
    digits = re.sub(r"[ -]", "", match.group(0))
    if 13 <= len(digits) <= 19 and _luhn_ok(digits):
        return "[REDACTED_CARD]"
    return match.group(0)


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: re.Pattern[str]
    replacement: Replacement


DEFAULT_RULES: tuple[Rule, ...] = (
    Rule("bearer", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=\-]{4,}"), "Bearer [REDACTED]"),
    Rule("api_key", re.compile(r"\b(?:sk|rk|pk)-[A-Za-z0-9_\-]{16,}"), "[REDACTED_API_KEY]"),
    Rule(
        "assignment",
        re.compile(
            r"(?i)\b([\w.\-]*(?:api[_\-]?key|token|secret|password|passwd)[\w.\-]*)"
            r"(\"?\s*[:=]\s*\"?)([^\s\"',;&}]+)"
        ),
        r"\1\2[REDACTED]",
    ),
    Rule("email", re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}"), "[REDACTED_EMAIL]"),
    Rule("card", re.compile(r"(?<![\d\-])\d(?:[ \-]?\d){12,18}(?![\d\-])"), _card),
)


class Redactor:
    """Applies the default rules plus any the user adds, in order."""

    def __init__(self, extra: Iterable[str | tuple[str, Replacement]] = (), *, defaults: bool = True) -> None:
        self._lock = threading.Lock()
        self._rules: tuple[Rule, ...] = DEFAULT_RULES if defaults else ()
        for item in extra:
            if isinstance(item, tuple):
                self.add(item[0], item[1])
            else:
                self.add(item)

    def add(self, pattern: str | re.Pattern[str], replacement: Replacement = "[REDACTED]") -> None:
        """Add a user pattern (compiled now, so a bad regex fails at configuration time)."""
        compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
        with self._lock:
            self._rules = (*self._rules, Rule(f"user{len(self._rules)}", compiled, replacement))

    def __call__(self, text: str) -> str:
        for rule in self._rules:
            text = rule.pattern.sub(rule.replacement, text)
        return text


def truncate(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return text[:max_chars] + TRUNCATION_MARKER.format(n=len(text) - max_chars)


def scrub(value: Any, redactor: Callable[[str], str], max_chars: int) -> Any:
    """Return a JSON-ready copy of ``value`` with every string redacted and truncated."""
    if isinstance(value, str):
        return truncate(redactor(value), max_chars)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, dict):
        return {str(k): scrub(v, redactor, max_chars) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [scrub(v, redactor, max_chars) for v in value]
    for dump in ("model_dump", "dict", "to_dict"):  # pydantic / SDK objects
        method = getattr(value, dump, None)
        if callable(method):
            try:
                return scrub(method(), redactor, max_chars)
            except Exception:  # fall through to repr: content capture is best effort
                break
    try:
        text = repr(value)
    except Exception:  # a user object whose repr fails must not stop the capture
        text = f"<{type(value).__name__}>"
    return truncate(redactor(text), max_chars)


def to_json(value: Any, redactor: Callable[[str], str], max_chars: int) -> str:
    return json.dumps(scrub(value, redactor, max_chars), ensure_ascii=False, separators=(",", ":"))

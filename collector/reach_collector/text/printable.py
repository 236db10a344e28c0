"""Untrusted text (span and agent names, attribute values) made safe to show on one line: control
characters escaped, for the collector's log and every answer of the MCP server.

A name like ``"step\\nexecute_tool wire_money"`` would otherwise print as two lines, the second
one forged. C0 controls (newline, carriage return, tab, escape, ...), DEL, C1 controls, the line
and paragraph separators and the bidirectional overrides become visible escapes: ``\\n``, ``\\r``
and ``\\t`` as those two characters, the rest as ``\\xNN`` or ``\\uNNNN``. Everything else,
backslashes included, is left as it is, so ordinary names read unchanged.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Final

__all__ = ["OneLineRecords", "error_name", "escape_all", "escape_controls"]

# C0, DEL, C1; U+061C and U+200E/F (bidi marks); U+2028/9 (line and paragraph separators, which
# str.splitlines and many terminals treat as line breaks); U+202A-E and U+2066-9 (bidi embeddings,
# overrides and isolates, which reorder what a reader sees).
_CONTROLS: Final = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
_NAMED: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """``text`` with every control character escaped (the same object when there is none)."""
    if _CONTROLS.search(text) is None:
        return text
    return _CONTROLS.sub(_escape, text)


def escape_all(value: Any) -> Any:
    """A JSON-like value (dicts, lists, strings, numbers) with every string in it, keys included,
    passed through ``escape_controls``; iterative, so a deep value cannot hit the recursion limit."""
    if isinstance(value, str):
        return escape_controls(value)
    if not isinstance(value, (dict, list)):
        return value
    root: list[Any] = [None]
    pending: list[tuple[Any, Any, Any]] = [(root, 0, value)]  # (container, slot, value to put there)
    while pending:
        into, slot, item = pending.pop()
        if isinstance(item, dict):
            copy: dict[Any, Any] = {}
            into[slot] = copy
            for key, child in item.items():
                key = escape_controls(key) if isinstance(key, str) else key
                copy[key] = None
                pending.append((copy, key, child))
        elif isinstance(item, list):
            items: list[Any] = [None] * len(item)
            into[slot] = items
            pending.extend((items, i, child) for i, child in enumerate(item))
        else:
            into[slot] = escape_controls(item) if isinstance(item, str) else item
    return root[0]


def _indented(text: str) -> str:
    """A traceback or stack under its record: each line indented and escaped, so no line of it
    (an exception message with a newline included) can pass for a record of its own."""
    return "\n".join("  " + escape_controls(line) for line in text.split("\n"))


class OneLineRecords(logging.Filter):
    """Makes each log record print as one line of its own: the message's control characters
    escaped, and a traceback's lines indented under it. On a handler it covers every logger that
    reaches the handler; never raises (a record it cannot format is left for the handler)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "_one_line", False):  # filtered already (by a logger and a handler)
            return True
        record.__dict__["_one_line"] = True
        try:
            message = record.getMessage()
        except Exception:  # a bad format or argument: logging's own handler reports it
            return True
        escaped = escape_controls(message)
        if escaped is not message:
            record.msg, record.args = escaped, None
        if record.exc_info and not record.exc_text:
            record.exc_text = _indented(logging.Formatter().formatException(record.exc_info))
        if record.stack_info:
            record.stack_info = _indented(record.stack_info)
        return True


def error_name(error_type: str) -> str:
    """An ``error.type`` as a person names it: a class's own name without its module
    (``RefundServiceError`` for ``billing.support.RefundServiceError``); a code stays whole."""
    return error_type.rsplit(".", 1)[-1] or error_type

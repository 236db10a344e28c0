"""Client-side binding of ``?`` placeholders into ClickHouse SQL literals.

18.16 has no server-side query parameters, so every value is rendered here as a literal that
both it and current ClickHouse parse the same way; a ``?`` inside a string literal, a quoted
identifier or a comment is left alone. The shared query modules pass one params list to either
store (DuckDB binds its own).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final

__all__ = ["bind", "literal"]

_ESCAPES: Final = str.maketrans(
    {"\\": "\\\\", "'": "\\'", "\0": "\\0", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
)


def literal(value: Any) -> str:
    """``value`` as a ClickHouse literal: NULL, 1/0 for booleans (18.16 has no Bool), integers,
    floats (nan, inf), quoted strings, arrays of those."""
    if value is None:
        return "NULL"
    if value is True or value is False:
        return "1" if value else "0"
    if isinstance(value, int):
        return str(int(value)) if value >= 0 else f"({int(value)})"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "(-inf)"
        text = repr(value)
        return text if value >= 0 else f"({text})"
    if isinstance(value, str):
        return "'" + value.translate(_ESCAPES) + "'"
    if isinstance(value, (bytes, bytearray)):
        return "'" + "".join(f"\\x{b:02X}" for b in value) + "'"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    raise TypeError(f"cannot bind a {type(value).__name__} into ClickHouse SQL")


def bind(sql: str, params: Sequence[Any] = ()) -> str:
    """``sql`` with each ``?`` outside literals, quoted names and comments replaced by the next
    parameter's literal. Raises ValueError when the counts differ."""
    if not params and "?" not in sql:
        return sql
    out: list[str] = []
    i, n, used = 0, len(sql), 0
    start = 0
    while i < n:
        c = sql[i]
        if c in "'\"`":
            i = _skip_quoted(sql, i, c)
        elif c == "-" and sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end < 0 else end + 1
        elif c == "/" and sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c == "?":
            if used >= len(params):
                raise ValueError(f"the SQL has more placeholders than the {len(params)} parameter(s) given")
            out.append(sql[start:i])
            out.append(literal(params[used]))
            used += 1
            i += 1
            start = i
        else:
            i += 1
    if used != len(params):
        raise ValueError(f"the SQL has {used} placeholder(s) for {len(params)} parameter(s)")
    out.append(sql[start:])
    return "".join(out)


def _skip_quoted(sql: str, i: int, quote: str) -> int:
    """The index after the quoted token opening at ``i`` (backslash escapes, doubled quotes)."""
    j = i + 1
    n = len(sql)
    while j < n:
        c = sql[j]
        if c == "\\":
            j += 2
        elif c == quote:
            if j + 1 < n and sql[j + 1] == quote:
                j += 2
            else:
                return j + 1
        else:
            j += 1
    return n

"""What a JSON body must be before ``json.loads`` reads it: nested at most ``MAX_DEPTH`` deep
(``json.loads`` recurses once per level, and a 30 000-deep body of 60 KB is a RecursionError) and
free of lone UTF-16 surrogates (``"\\ud800"``, which no store can hold). A 400 says which.

The scan is linear: string literals are found by one regular expression, brackets counted outside
them, and only a literal with a surrogate escape in it is decoded to be checked."""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Final

from fastapi import HTTPException

__all__ = ["MAX_DEPTH", "check_json", "lone_surrogate", "nesting_depth"]

MAX_DEPTH: Final = 64  # the bodies the API reads nest 2 or 3 deep
_STRING: Final = re.compile(r'"(?:[^"\\]|\\.)*"?', re.S)  # an unterminated one runs to the end
_BRACKET: Final = re.compile(r"[\[\]{}]")
_SURROGATE: Final = re.compile(r"\\u[dD][89a-fA-F]")
_STEP: Final = {"[": 1, "{": 1, "]": -1, "}": -1}


def _text(raw: bytes) -> str:
    """``raw`` as ``json.loads`` would decode it (UTF-8, -16 or -32); bad bytes it refuses itself."""
    return raw.decode(json.detect_encoding(raw), "replace")


def nesting_depth(raw: bytes) -> int:
    """The deepest ``[``/``{`` nesting of ``raw`` outside strings (0 for a scalar)."""
    steps = [_STEP[c] for c in _BRACKET.findall(_STRING.sub("", _text(raw)))]
    return max(accumulate(steps, initial=0))


def lone_surrogate(raw: bytes) -> str | None:
    """The first string literal of ``raw`` whose escapes spell a lone surrogate, or None."""
    text = _text(raw)
    if not _SURROGATE.search(text):
        return None
    for match in _STRING.finditer(text):
        literal = match.group()
        if _SURROGATE.search(literal):
            try:
                json.loads(literal).encode("utf-8")
            except ValueError:  # UnicodeEncodeError, or a literal json.loads refuses anyway
                return literal
    return None


def check_json(raw: bytes, max_depth: int = MAX_DEPTH) -> None:
    """400 when ``raw`` nests deeper than ``max_depth`` or holds a lone surrogate."""
    if raw.count(b"[") + raw.count(b"{") > max_depth:  # else it cannot nest deeper
        depth = nesting_depth(raw)
        if depth > max_depth:
            raise HTTPException(400, f"body nests {depth} levels deep; at most {max_depth} are read")
    if b"\\" in raw:
        literal = lone_surrogate(raw)
        if literal is not None:
            shown = literal if len(literal) <= 40 else literal[:40] + "…"
            raise HTTPException(400, f"body string {shown} is not valid Unicode (a lone surrogate)")

"""The decoder's Arrow span batch → the ClickHouse span table's columns, as Python lists for
clickhouse-driver's columnar insert, with the attributes and the resource also as key/value
arrays.

A value in those arrays is what DuckDB's ``json_extract_string`` returns for the key, so an
attribute filter answers the same on both stores: a string raw; a number, boolean, array or
object as JSON text written the way DuckDB (yyjson) writes it — shortest round-trip digits,
plain notation for decimal exponents in (-6, 21] (``100.0``, ``0.000001``) and ``1.5e-7``,
``1e21`` outside, ``\\u001F`` escapes upper case. A key whose value is JSON null is left out
(``json_extract_string`` answers NULL, as for an absent key). Checked value by value against
DuckDB in the tests.
"""

from __future__ import annotations

import contextlib
import gc
import json
import math
import re
from collections.abc import Iterator
from typing import Any, Final

import orjson
import pyarrow as pa

from reach_collector.store.clickhouse.schema import SPAN_TYPES

__all__ = ["gc_paused", "insert_columns", "json_value_text", "key_value_arrays", "key_values"]

# What a NULL is stored as in the span columns that are not Nullable (the decoder writes none).
_DEFAULTS: Final = {"String": "", "UInt8": 0, "Int64": 0, "UInt32": 0, "Float64": 0.0}
_STR: Final = frozenset({str})
_NONE: Final = type(None)
_DOUBLES: dict[float, str] = {}
_LOWER_ESCAPE: Final = re.compile(r"(?<!\\)((?:\\\\)*)\\u([0-9a-f]{4})")


def insert_columns(table: pa.Table) -> list[list[Any]]:
    """The batch's columns in ``schema.INSERT_COLUMNS`` order. The cyclic garbage collector is
    paused meanwhile: the millions of lists and strings built here would set it off again and
    again, for nothing to collect (measured: a third of the time)."""
    with gc_paused():
        return _columns(table)


def key_value_arrays(column: pa.Array | pa.ChunkedArray) -> tuple[list[list[str]], list[list[str]]]:
    """The keys and the values of each row's JSON object text (the attributes or the resource):
    the key/value array columns, as lists of lists (``native`` encodes them)."""
    with gc_paused():
        return _arrays(column.to_pylist())


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for a bulk conversion (nothing in it makes cycles)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _columns(table: pa.Table) -> list[list[Any]]:
    columns: list[list[Any]] = []
    for name, kind in SPAN_TYPES.items():
        col = table.column(name)
        if col.null_count and not kind.startswith("Nullable"):
            col = col.fill_null(_DEFAULTS[kind])
        columns.append(col.to_pylist())
    attributes = columns[list(SPAN_TYPES).index("attributes")]
    resources = columns[list(SPAN_TYPES).index("resource")]
    attr_keys, attr_values = _arrays(attributes)
    res_keys, res_values = _arrays(resources)
    return [*columns, attr_keys, attr_values, res_keys, res_values]


def _arrays(texts: list[str | None]) -> tuple[list[list[str]], list[list[str]]]:
    keys: list[list[str]] = []
    values: list[list[str]] = []
    seen: dict[str | None, tuple[list[str], list[str]]] = {}  # a request's rows share one resource text
    for text in texts:
        kv = seen.get(text)
        if kv is None:
            kv = key_values(text)
            if len(seen) < 4096:
                seen[text] = kv
        keys.append(kv[0])
        values.append(kv[1])
    return keys, values


def key_values(text: str | None) -> tuple[list[str], list[str]]:
    """A JSON object's top-level keys and their values as ``json_extract_string`` gives them."""
    if not text:
        return [], []
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:  # NaN, integers beyond 64 bits: the stdlib reads them
        try:
            obj = json.loads(text)
        except ValueError:
            return [], []
    if not isinstance(obj, dict):
        return [], []
    values = list(obj.values())
    kinds = set(map(type, values))
    if kinds <= _STR:  # the common row: every value a string
        return list(obj), values
    if _NONE in kinds:  # a key whose value is null is no value (json_extract_string: NULL)
        keys = [key for key, value in obj.items() if value is not None]
        values = [value for value in values if value is not None]
    else:
        keys = list(obj)
    return keys, [value if value.__class__ is str else _text(value) for value in values]


def _text(value: Any) -> str:
    """A non-string attribute value: the common kinds first, the rest through json_value_text."""
    kind = value.__class__
    if kind is int:
        return str(value)
    if kind is float:
        return _double_cached(value)
    if kind is list and set(map(type, value)) <= _STR:  # e.g. finish reasons: orjson's text
        text = orjson.dumps(value).decode()
        return _upper_escapes(text) if "\\u" in text else text
    return json_value_text(value)


def json_value_text(value: Any) -> str:
    """A non-string JSON value as yyjson writes it (what DuckDB's JSON functions return)."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _double(value)
    if isinstance(value, str):
        text = orjson.dumps(value).decode()
        return _upper_escapes(text) if "\\u" in text else text
    if isinstance(value, list):
        return "[" + ",".join(json_value_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{" + ",".join(f"{json_value_text(str(k))}:{json_value_text(v)}" for k, v in value.items()) + "}"
        )
    return json.dumps(value)  # pragma: no cover - JSON has no other types


def _upper_escapes(text: str) -> str:
    """orjson writes ``\\u001f``, yyjson ``\\u001F``."""
    return _LOWER_ESCAPE.sub(lambda m: m.group(1) + "\\u" + m.group(2).upper(), text)


def _double_cached(value: float) -> str:
    text = _DOUBLES.get(value)
    if text is None:
        text = _double(value)
        # Sampling parameters repeat, measured times do not: bounded. Not zeros: 0.0 == -0.0.
        if value and len(_DOUBLES) < 65536:
            _DOUBLES[value] = text
    return text


def _double(value: float) -> str:
    if not math.isfinite(value):  # DuckDB refuses such JSON; the stdlib's spelling
        return json.dumps(value)
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    text = repr(abs(value))  # Python's repr is the shortest round-trip form too
    mantissa, _, exp = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    all_digits = whole + frac
    digits = all_digits.lstrip("0")
    # value = 0.DIGITS × 10^point
    point = len(whole) + (int(exp) if exp else 0) - (len(all_digits) - len(digits))
    digits = digits.rstrip("0") or "0"
    n = len(digits)
    if -6 < point <= 21:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= n:
            return f"{sign}{digits}{'0' * (point - n)}.0"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    rest = f".{digits[1:]}" if n > 1 else ""
    return f"{sign}{digits[0]}{rest}e{point - 1}"

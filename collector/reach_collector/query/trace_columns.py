"""The spans of the trace JSON (§9) encoded from Arrow columns: what views.span_json makes of one
row, for a whole trace at once, each field a column at a time with Arrow's kernels.

The stored JSON columns (attributes, events, links, resource, scope) are spliced in as stored, not
parsed and re-encoded: the writer encodes them as JSON (orjson, or the compiled flattener held to
it), which reads back as the same values. Text where the dict path's reading (views._load: orjson,
then the stdlib) would say something else — NaN or Infinity, which Python's reader takes and JSON
has not; an integer beyond 64 bits, which orjson reads as a double; an exponent past a double's
range — is read and re-encoded that way, value by value (NaN → null, as orjson writes it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from reach_collector.store.schema import ARROW_SCHEMA
from reach_collector.store.span_rows import SpanRows

_TEXT: Final = pa.large_string()  # 64-bit offsets: a trace's encoded spans may pass 2 GB
_NS: Final = 1_000_000_000
# A character JSON needs escaped in a string; values with none are only quoted.
_ESCAPE: Final = r'["\\\x00-\x1f]'
# Stored text that reads back otherwise than it is written (see above): NaN, Infinity, 20 digits (or
# 19 after a minus: past 64 bits, maybe), an exponent of 309 or more. Inside a string too: then the
# value is only re-encoded for nothing.
_REREAD: Final = (
    r"NaN|Infinity|[0-9]{20}|-[0-9]{19}|[0-9][eE]\+?0*([4-9][0-9]{2}|3[1-9][0-9]|309|[1-9][0-9]{3})"
)
KIND_NAMES: Final = ("INTERNAL", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
STATUS_NAMES: Final = ("UNSET", "OK", "ERROR")


def span_table(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """A trace's rows as columns, the first of each span id kept (exporter retries repeat spans)."""
    if isinstance(rows, SpanRows):
        table = rows.table
    else:
        table = pa.Table.from_pylist([dict(r) for r in rows], schema=ARROW_SCHEMA)
    ids = table.column("span_id").to_pylist()
    if len(set(ids)) == len(ids):
        return table
    seen: set[str] = set()
    keep = []
    for span_id in ids:
        keep.append(span_id not in seen)
        seen.add(span_id)
    return table.filter(pa.array(keep))


def rows_where(
    table: pa.Table, column: str, values: Sequence[str], columns: Sequence[str]
) -> list[tuple[int, dict[str, Any]]]:
    """``(row index, row)`` of the rows whose ``column`` is one of ``values``, in table order, each
    row holding ``columns`` only."""
    col = table.column(column)
    hit = pc.fill_null(pc.is_in(col, value_set=pa.array(values, col.type)), False)
    index = pc.indices_nonzero(hit)
    rows = table.select(list(columns)).take(index).to_pylist()
    return list(zip(index.to_pylist(), rows, strict=True))


def encode_spans(table: pa.Table, tails: Mapping[int, str]) -> pa.Array:
    """A JSON object per row of ``table``, as views.span_json shapes it (same keys, same order);
    ``tails`` adds text before a row's closing brace (``,"handoff":{...}``)."""
    n = table.num_rows
    if n == 0:
        return pa.array([], _TEXT)

    def col(name: str) -> pa.Array:
        return _column(table, name)

    if tails:
        ends = ["}"] * n
        for index, tail in tails.items():
            ends[index] = tail + "}"
        close: pa.Array | pa.Scalar = pa.array(ends, _TEXT)
    else:
        close = _lit("}")
    parts: list[pa.Array | pa.Scalar] = [
        _lit('{"trace_id":'), _text(col("trace_id")),
        _lit(',"span_id":'), _text(col("span_id")),
        _lit(',"parent_span_id":'), _text(col("parent_span_id")),
        _lit(',"name":'), _text(col("name")),
        _lit(',"kind":'), _names(col("kind"), KIND_NAMES),
        _lit(',"service":'), _text(col("service")),
        _lit(',"start_time_unix_nano":'), _integer(col("start_ns")),
        _lit(',"end_time_unix_nano":'), _integer(col("end_ns")),
        _lit(',"start_time":'), _iso(col("start_ns")),
        _lit(',"end_time":'), _iso(col("end_ns")),
        _lit(',"duration_ms":'), _number(col("duration_ms")),
        _lit(',"status":{"code":'), _names(col("status_code"), STATUS_NAMES),
        _lit(',"message":'), _text(col("status_message"), '""'),
        _lit('},"attributes":'), _stored(col("attributes"), "{}"),
        _lit(',"events":'), _stored(col("events"), "[]"),
        _lit(',"links":'), _stored(col("links"), "[]"),
        _lit(',"resource":'), _stored(col("resource"), "{}"),
        _lit(',"scope":'), _stored(col("scope"), "null"),
        _lit(',"trace_state":'), _text(col("trace_state"), '""'),
        _lit(',"flags":'), _integer(col("flags")),
        _lit(',"agent":'), _text(col("agent")),
        _lit(',"operation":'), _text(col("operation")),
        _lit(',"model":'), _text(col("model")),
        _lit(',"input_tokens":'), _integer(col("input_tokens")),
        _lit(',"output_tokens":'), _integer(col("output_tokens")),
        close,
    ]  # fmt: skip
    return pc.binary_join_element_wise(*parts, _lit(""))


def joined(texts: pa.Array) -> bytes:
    """The texts one after another, comma-separated."""
    if len(texts) == 0:
        return b""
    whole = pa.LargeListArray.from_arrays(pa.array([0, len(texts)], pa.int64()), texts)
    return bytes(pc.binary_join(whole, _lit(","))[0].as_buffer())


def _lit(text: str) -> pa.Scalar:
    return pa.scalar(text, _TEXT)


def _column(table: pa.Table, name: str) -> pa.Array:
    array = table.column(name).combine_chunks()
    if pa.types.is_string(array.type) or str(array.type) == "string_view":
        array = array.cast(_TEXT)
    return array


def _text(array: pa.Array, null: str = "null") -> pa.Array:
    """JSON strings: quoted; the few values with a quote, backslash or control character go
    through orjson. ``null`` stands for a missing value."""
    quote = _lit('"')
    out = pc.binary_join_element_wise(quote, array, quote, _lit(""))
    if _anywhere(array, _ESCAPE):
        odd = pc.fill_null(pc.match_substring_regex(array, _ESCAPE), False)
        escaped = [orjson.dumps(v).decode() for v in array.filter(odd).to_pylist()]
        out = pc.replace_with_mask(out, odd, pa.array(escaped, _TEXT))
    return pc.fill_null(out, _lit(null))


def _anywhere(array: pa.Array, pattern: str) -> bool:
    """Whether ``pattern`` matches in any value: one search over the column's text, read in place
    (twice as fast as a search per value, which runs only where this finds something)."""
    offsets = array.buffers()[1]
    if offsets is None or len(array) == 0:
        return False
    ends = np.frombuffer(offsets, dtype=np.int64)[array.offset : array.offset + len(array) + 1]
    span = pa.py_buffer(np.array([ends[0], ends[-1]], dtype=np.int64))
    text = pa.Array.from_buffers(_TEXT, 1, [None, span, array.buffers()[2]])
    return bool(pc.any(pc.match_substring_regex(text, pattern)).as_py())


def _integer(array: pa.Array) -> pa.Array:
    return pc.fill_null(array.cast(_TEXT), _lit("null"))


def _number(array: pa.Array) -> pa.Array:
    """Doubles as orjson writes them: the shortest text that reads back, ``.0`` on a whole number,
    null for NaN and the infinities."""
    text = array.cast(_TEXT)
    whole = pc.fill_null(pc.match_substring_regex(text, r"^-?[0-9]+$"), False)
    text = pc.if_else(whole, pc.binary_join_element_wise(text, _lit(".0"), _lit("")), text)
    finite = pc.fill_null(pc.is_finite(array), False)
    return pc.if_else(finite, text, _lit("null"))


def _names(array: pa.Array, names: tuple[str, ...]) -> pa.Array:
    """An enum's quoted name; out of range (or missing), the first name."""
    index = array.cast(pa.int64())
    known = pc.and_(pc.greater_equal(index, 0), pc.less(index, len(names)))
    index = pc.fill_null(pc.if_else(known, index, 0), 0)
    return pc.take(pa.array([f'"{n}"' for n in names], _TEXT), index)


def _iso(ns: pa.Array) -> pa.Array:
    """views.iso of each time, quoted: UTC to the second, microseconds unless zero, a Z."""
    seconds = pc.divide(ns, _NS)  # truncates: step back where the remainder is negative
    rem = pc.subtract(ns, pc.multiply(seconds, _NS))
    negative = pc.fill_null(pc.less(rem, 0), False)
    seconds = pc.if_else(negative, pc.subtract(seconds, 1), seconds)
    rem = pc.if_else(negative, pc.add(rem, _NS), rem)
    micros = pc.divide(rem, 1000)
    # A trace spans few distinct seconds: each is formatted once.
    distinct = pc.unique(seconds)
    stamps = pc.strftime(distinct.cast(pa.timestamp("s")), format="%Y-%m-%dT%H:%M:%S").cast(_TEXT)
    stamp = pc.take(stamps, pc.index_in(seconds, value_set=distinct))
    fraction = pc.utf8_lpad(micros.cast(_TEXT), 6, "0")
    quote, empty = _lit('"'), _lit("")
    text = pc.if_else(
        pc.equal(micros, 0),
        pc.binary_join_element_wise(quote, stamp, _lit('Z"'), empty),
        pc.binary_join_element_wise(quote, stamp, _lit("."), fraction, _lit('Z"'), empty),
    )
    return pc.fill_null(text, _lit("null"))


def _stored(array: pa.Array, empty: str) -> pa.Array:
    """Stored JSON text as it is; ``empty`` where there is none (NULL or '')."""
    out = pc.fill_null(pc.if_else(pc.equal(array, _lit("")), _lit(empty), array), _lit(empty))
    if _anywhere(array, _REREAD):
        odd = pc.fill_null(pc.match_substring_regex(array, _REREAD), False)
        fixed = [_reencoded(text) for text in array.filter(odd).to_pylist()]
        out = pc.replace_with_mask(out, odd, pa.array(fixed, _TEXT))
    return out


def _reencoded(text: str) -> str:
    """Stored text read as views._load reads it (orjson; the stdlib where orjson refuses NaN,
    Infinity or a huge exponent) and written as JSON, NaN and the infinities as null."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        value = json.loads(text)
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # the stdlib read an integer beyond 64 bits too: it writes it, not NaN
        return json.dumps(finite(value), ensure_ascii=False, separators=(",", ":"))


def finite(value: Any) -> Any:
    """``value`` with NaN and the infinities as None (JSON has no word for them: orjson writes null)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value

"""The span batch in ClickHouse's Native format, column by column, built from the Arrow buffers in
bulk: what clickhouse-driver's columnar insert builds value by value from Python lists (≈ 11 µs a
span of the writer's CPU, under the GIL, on this schema). ``driver`` sends the block.

The format (the same on 18.16 and current releases): a fixed-width column is its values little
endian; a String is each value as a LEB128 length and its UTF-8 bytes; ``Nullable(T)`` is one byte
per row (1 = NULL) then the T column with the type's default where NULL; ``Array(T)`` is the
running element count per row as UInt64, then the T column of every element. A NULL in a column
that is not Nullable is stored as its type's default, as ``convert`` does for the lists.
"""

from __future__ import annotations

from typing import Final, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from reach_collector.store.clickhouse.convert import gc_paused, key_values
from reach_collector.store.clickhouse.schema import KV_COLUMNS, SPAN_TYPES

__all__ = ["NativeBlock", "encode_column", "encode_strings", "span_block"]

_FIXED: Final = {
    "UInt8": pa.uint8(),
    "UInt32": pa.uint32(),
    "Int32": pa.int32(),
    "Int64": pa.int64(),
    "Float64": pa.float64(),
}
_EMPTY: Final = pa.scalar(b"", pa.large_binary())
_SHIFTS: Final = np.arange(0, 35, 7, dtype=np.uint64)  # a length below 2^35 takes ≤ 5 bytes
_SLOTS: Final = np.arange(5)


class NativeBlock(NamedTuple):
    """One insert's data: ``rows`` and, per column, its name, ClickHouse type and Native bytes. A
    tuple, so clickhouse-driver's ``execute`` takes it as an insert's data."""

    rows: int
    columns: tuple[tuple[str, str, bytes], ...]


def span_block(table: pa.Table) -> NativeBlock:
    """The span table's insert (``schema.INSERT_COLUMNS``, in order) for a decoded batch. The
    cyclic garbage collector is paused meanwhile (see ``convert.insert_columns``)."""
    with gc_paused():
        return _span_block(table)


def _span_block(table: pa.Table) -> NativeBlock:
    columns = [(name, kind, encode_column(table.column(name), kind)) for name, kind in SPAN_TYPES.items()]
    kv = (*_key_value_columns(table.column("attributes")), *_key_value_columns(table.column("resource")))
    columns += [(name, kind, data) for (name, kind), data in zip(KV_COLUMNS, kv, strict=True)]
    return NativeBlock(table.num_rows, tuple(columns))


def encode_column(column: pa.Array | pa.ChunkedArray, kind: str) -> bytes:
    """One Arrow column as a ClickHouse column of type ``kind`` (String, the fixed-width types of
    the span table, Nullable of either)."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if kind.startswith("Nullable("):
        inner = kind[len("Nullable(") : -1]
        nulls: np.ndarray = pc.is_null(array).cast(pa.uint8()).to_numpy(zero_copy_only=False)
        return nulls.tobytes() + encode_column(array, inner)
    if kind == "String":
        return encode_strings(array)
    target = _FIXED.get(kind)
    if target is None:
        raise ValueError(f"no Native encoding here for {kind}")
    values = array.cast(target)  # safe: a value that does not fit raises, as the driver does
    if values.null_count:
        values = values.fill_null(0)
    out: np.ndarray = values.to_numpy(zero_copy_only=False).astype(target.to_pandas_dtype(), copy=False)
    return out.tobytes()


def encode_strings(array: pa.Array) -> bytes:
    """A String column: each value's LEB128 byte length, then its bytes (NULL as empty)."""
    return _data(_encoded(array))


def _encoded(array: pa.Array) -> pa.LargeBinaryArray:
    """Each value as its own Native String encoding (length, then bytes), NULL as empty."""
    binary = array.cast(pa.large_binary())
    if binary.null_count:
        binary = binary.fill_null(b"")
    n = len(binary)
    prefix_bytes, prefix_sizes = _varints(pc.binary_length(binary).to_numpy(zero_copy_only=False))
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(prefix_sizes, out=offsets[1:])
    prefixes = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(prefix_bytes)]
    )
    joined: pa.LargeBinaryArray = pc.binary_join_element_wise(prefixes, binary, _EMPTY)
    return joined


def _offsets(array: pa.LargeBinaryArray) -> np.ndarray:
    return np.frombuffer(array.buffers()[1], dtype=np.int64, count=len(array) + 1, offset=array.offset * 8)


def _data(array: pa.LargeBinaryArray) -> bytes:
    """The values of a binary array back to back."""
    data = array.buffers()[2]
    if data is None or not len(array):
        return b""
    bounds = _offsets(array)
    return bytes(data.slice(int(bounds[0]), int(bounds[-1] - bounds[0])).to_pybytes())


def _key_value_columns(texts: pa.Array | pa.ChunkedArray) -> tuple[bytes, bytes]:
    """The Array(String) key and value columns of a JSON object text column (``convert.key_values``
    of each distinct text once: a request's spans share their resource)."""
    array = texts.combine_chunks() if isinstance(texts, pa.ChunkedArray) else texts
    encoded = pc.dictionary_encode(array.fill_null("") if array.null_count else array)
    indices = encoded.indices
    pairs = [key_values(text) for text in encoded.dictionary.to_pylist()]
    return tuple(_string_arrays([p[i] for p in pairs], indices) for i in (0, 1))  # type: ignore[return-value]


def _string_arrays(lists: list[list[str]], indices: pa.Array) -> bytes:
    """An Array(String) column whose row r holds ``lists[indices[r]]``: every row's element count
    running as UInt64, then the elements of every row as a String column. Each distinct list is
    encoded once, and the rows take theirs (a gather of bytes)."""
    distinct = pa.array(lists, pa.list_(pa.string()))  # fresh: offsets from 0
    ends = distinct.offsets.to_numpy()
    elements = _encoded(distinct.values)
    per_list = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(),
        len(distinct),
        [None, pa.py_buffer(_offsets(elements)[ends]), elements.buffers()[2]],
    )
    counts = np.diff(ends).astype(np.uint64)[indices.to_numpy(zero_copy_only=False)]
    return np.cumsum(counts, dtype=np.uint64).tobytes() + _data(pc.take(per_list, indices))


def _varints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each value as LEB128 (7 bits a byte, low first, the top bit set on all but the last):
    the bytes of all of them, and how many each takes."""
    if not len(values) or int(values.max()) < 0x80:  # the common case: one byte each
        return values.astype(np.uint8), np.ones(len(values), dtype=np.int64)
    v = values.astype(np.uint64)
    sizes = 1 + sum((v >= np.uint64(1 << bits)).astype(np.int64) for bits in (7, 14, 21, 28))
    groups = (v[:, None] >> _SHIFTS[None, :]) & np.uint64(0x7F)
    more = (_SLOTS[None, :] < (sizes[:, None] - 1)).astype(np.uint64) << np.uint64(7)
    grid = (groups | more).astype(np.uint8)
    return grid[_SLOTS[None, :] < sizes[:, None]], sizes

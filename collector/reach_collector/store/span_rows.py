"""One trace's stored rows as Arrow columns (the store.schema columns), read as row dicts on demand.

``TraceStore.trace_spans`` returns a sequence of row mappings; a store that reads columns returns
this, so the trace view encodes whole columns at once (views.trace_body) while every other reader
still iterates rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Final, overload

import pyarrow as pa

# A trace of at least this many rows is read and encoded as columns. Below it row dicts cost less:
# Arrow's per-call costs (~5 ms a trace, measured) pass the dicts' per-span cost near 500 spans.
COLUMNS_FROM: Final = 500


class SpanRows(Sequence[dict[str, Any]]):
    """Rows of ``table`` as dicts (built once, on first use); ``table`` holds them as columns."""

    __slots__ = ("_rows", "table")

    def __init__(self, table: pa.Table) -> None:
        self.table = table
        self._rows: list[dict[str, Any]] | None = None

    def _list(self) -> list[dict[str, Any]]:
        if self._rows is None:
            self._rows = self.table.to_pylist()
        return self._rows

    def __len__(self) -> int:
        return int(self.table.num_rows)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        return self._list()[index]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self._list())

    def __repr__(self) -> str:
        return f"SpanRows({self.table.num_rows} rows)"

"""Current ClickHouse in-process, through ``chdb`` (a session on a data directory): the same
statements as a server gets, so the schema and the queries are checked on both 18.16 and a
current release. One session per directory and process; statements are serialised.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from reach_collector.store.clickhouse.driver import StoreError
from reach_collector.store.unavailable import StoreUnavailable

__all__ = ["ChdbBackend"]

_ARROW = {
    "String": pa.string(),
    "Int64": pa.int64(),
    "Int32": pa.int32(),
    "UInt32": pa.uint32(),
    "UInt8": pa.uint8(),
    "Float64": pa.float64(),
}


def _arrow_type(kind: str) -> pa.DataType:
    if kind.startswith("Nullable("):
        return _arrow_type(kind[len("Nullable(") : -1])
    if kind.startswith("Array("):
        return pa.list_(_arrow_type(kind[len("Array(") : -1]))
    return _ARROW[kind]


def _cells(values: list[Any], kind: str) -> list[Any]:
    if "UInt8" in kind:  # booleans arrive for the BOOLEAN columns of DuckDB's schema
        return [None if v is None else int(v) for v in values]
    return values


class ChdbBackend:
    def __init__(self, path: str | Path, database: str = "reach") -> None:
        """A session on ``path`` whose unqualified table names are in ``database`` (created
        here if missing, as a server's client connects into its database)."""
        from chdb import session

        self.where = f"chdb at {path}"
        self._session = session.Session(str(path))
        self._lock = threading.Lock()
        self._closed = False
        self._session.query(f"CREATE DATABASE IF NOT EXISTS {database}")
        self._session.query(f"USE {database}")

    def execute(self, sql: str, settings: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        if settings:
            sql = f"{sql} SETTINGS " + ", ".join(f"{k} = {v!r}" for k, v in settings.items())
        with self._lock:
            if self._closed:
                raise StoreUnavailable(f"{self.where}: the store is closed")
            try:
                result = self._session.query(sql, "ArrowTable")
            except Exception as exc:
                raise StoreError(f"{self.where}: {str(exc).strip().splitlines()[0]}") from None
        if not isinstance(result, pa.Table) or result.num_columns == 0:
            return []
        return list(zip(*(col.to_pylist() for col in result.columns), strict=True))

    def insert(
        self,
        table: str,
        columns: Sequence[str],
        data: list[list[Any]],
        types: Sequence[str],
        settings: dict[str, Any] | None = None,
    ) -> None:
        arrays = [
            pa.array(_cells(values, kind), type=_arrow_type(kind))
            for values, kind in zip(data, types, strict=True)
        ]
        reach_rows = pa.Table.from_arrays(arrays, names=list(columns))  # noqa: F841 - read by Python()
        names = ", ".join(columns)
        with self._lock:
            if self._closed:
                raise StoreUnavailable(f"{self.where}: the store is closed")
            try:
                self._session.query(f"INSERT INTO {table} ({names}) SELECT {names} FROM Python(reach_rows)")
            except Exception as exc:
                raise StoreError(f"{self.where}: {str(exc).strip().splitlines()[0]}") from None

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._session.close()

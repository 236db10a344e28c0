"""Which store ``--db`` names: a DuckDB file (or ``:memory:``), or ClickHouse
(``clickhouse://HOST:9000/DATABASE[?cluster=NAME]``) — opening it, and saying where the data
lives without a password."""

from __future__ import annotations

from pathlib import Path

from reach_collector.config import Settings
from reach_collector.store.base import TraceStore
from reach_collector.store.duckdb_store import MEMORY, DuckDBStore
from reach_collector.text.clickhouse_url import is_clickhouse_url, parse_clickhouse_url

__all__ = ["describe_store", "open_store"]


def open_store(settings: Settings) -> TraceStore:
    """Open the store ``settings.db`` names. A ClickHouse store raises ``URLError`` for a bad
    URL, ``StoreUnavailable`` when the server cannot be reached, ``StoreError`` when it refuses;
    DuckDB raises ``duckdb.Error``."""
    if is_clickhouse_url(settings.db):
        from reach_collector.store.clickhouse.store import ClickHouseStore

        return ClickHouseStore(parse_clickhouse_url(settings.db))
    return DuckDBStore(settings.db, memory_limit=settings.memory_limit, threads=settings.threads)


def describe_store(settings: Settings, store: TraceStore | None = None) -> str:
    """Where the data lives, for the startup line (never a password)."""
    if store is not None:
        return store.describe()
    if is_clickhouse_url(settings.db):
        return parse_clickhouse_url(settings.db).display()
    if settings.db == MEMORY:
        return "in memory (nothing is kept after exit)"
    return str(Path(settings.db).resolve())

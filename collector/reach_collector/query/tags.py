"""Tag names and values seen in stored spans over a time range, for the Tempo API's tag search:
each a bounded scan (``scan_rows`` spans at most) returning at most ``limit`` distinct answers."""

from __future__ import annotations

from reach_collector.store.base import TraceStore
from reach_collector.store.dialect import dialect_of

__all__ = ["attribute_keys", "attribute_values", "span_names"]


def attribute_keys(store: TraceStore, column: str, lo: int, hi: int, scan_rows: int, limit: int) -> list[str]:
    """The attribute keys in ``column`` (``attributes`` or ``resource``, never user input) of spans
    ending in ``(lo, hi]``, sorted."""
    each_key, stored = dialect_of(store).attr_keys(column)
    rows = store.query(
        f"SELECT DISTINCT k FROM (SELECT {each_key} AS k FROM "
        f"(SELECT {stored} FROM spans WHERE end_ns > ? AND end_ns <= ? AND {column} IS NOT NULL LIMIT ?)) "
        "ORDER BY k LIMIT ?",
        [lo, hi, scan_rows, limit],
    )
    return [str(r[0]) for r in rows]


def attribute_values(
    store: TraceStore, column: str, key: str, lo: int, hi: int, scan_rows: int, limit: int
) -> list[str]:
    """The values of attribute ``key`` in ``column`` of spans ending in ``(lo, hi]``, each as its
    stored JSON text, sorted."""
    value, key_params = dialect_of(store).attr_json(column, key)
    rows = store.query(
        f"SELECT DISTINCT v FROM (SELECT v FROM (SELECT {value} AS v FROM spans "
        "WHERE end_ns > ? AND end_ns <= ?) WHERE v IS NOT NULL LIMIT ?) ORDER BY v LIMIT ?",
        [*key_params, lo, hi, scan_rows, limit],
    )
    return [str(r[0]) for r in rows if r[0] is not None]


def span_names(store: TraceStore, lo: int, hi: int, scan_rows: int, limit: int) -> list[str]:
    """The span names of spans ending in ``(lo, hi]``, sorted."""
    rows = store.query(
        "SELECT DISTINCT name FROM (SELECT name FROM spans WHERE end_ns > ? AND end_ns <= ? LIMIT ?) "
        "ORDER BY name LIMIT ?",
        [lo, hi, scan_rows, limit],
    )
    return [str(r[0]) for r in rows if r[0] is not None]

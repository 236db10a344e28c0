"""A request of hundreds of evaluations is stored as one columnar batch, the rows the same as one
by one would store them (nulls, floats and text kept), and the heartbeats' few rows still go in."""

from __future__ import annotations

from pathlib import Path

from reach_collector.store.duckdb_store import DuckDBStore
from reach_collector.store.schema import AUX_COLUMNS


def test_many_rows_and_few_rows_store_the_same(tmp_path: Path) -> None:
    store = DuckDBStore(tmp_path / "t.duckdb")
    try:
        rows = [
            (
                1_000 + i,
                f"{i:032x}",
                f"{i:016x}" if i % 3 else None,
                None if i % 5 else f"resp-{i}",
                "correctness",
                None if i % 7 == 0 else i / 10,
                None if i % 4 == 0 else ("correct" if i % 2 else "incorrect"),
                "why " * (i % 3),
                None,
                "svc",
                "log",
            )
            for i in range(300)
        ]
        assert len(rows[0]) == len(AUX_COLUMNS["evaluations"])
        store.append("evaluations", rows)  # many: one columnar batch
        store.append("evaluations", rows[:3])  # few: bound one by one
        got = store.query(f"SELECT {', '.join(AUX_COLUMNS['evaluations'])} FROM evaluations ORDER BY time_ns")
        assert [tuple(r) for r in got] == sorted(rows + rows[:3], key=lambda r: r[0])
    finally:
        store.close()

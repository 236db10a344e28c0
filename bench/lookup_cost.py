"""Where one trace lookup's time goes, a phase at a time, in one process with nothing else running:
what ``GET /api/traces/{id}`` costs before any contention with ingest is added to it.

A DuckDB file is filled with the heavy workload of bench/ingest.py (19-span multi-agent traces,
a production-sized resource), decoded and flattened as the collector does, in 64k-row commits in
arrival order, with the trace lookup built by the writer's own statements, then checkpointed.
Then, for the same random traces:

- the collector's read (``DuckDBStore.trace_spans``), the evaluations query (``for_trace``) and
  the JSON (``trace_body``), each timed;
- the two statements of the read alone: the time range from the lookup tables, then the 33-column
  span read the range bounds;
- the span read with fewer columns, one column at a time, and by row id (the same rows found
  without any filter), to tell finding the rows from reading them;
- the span read through an ART index on ``spans.trace_id`` (built here, on a copy): its size, and
  what a lookup through it waits for while a checkpoint runs, beside one that scans the trace's
  time range (as the collector's read does).

    python bench/lookup_cost.py [--requests 800] [--lookups 300]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _spans import make_bodies

Timings = dict[str, float]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _timed(ids: list[str], run: Callable[[str], Any]) -> Timings:
    """p50/p99 milliseconds of ``run(trace_id)`` over ``ids`` (after five warm-up calls)."""
    for trace_id in ids[:5]:
        run(trace_id)
    times = []
    for trace_id in ids:
        started = time.perf_counter()
        run(trace_id)
        times.append((time.perf_counter() - started) * 1000)
    return {"p50": _pct(times, 0.5), "p99": _pct(times, 0.99)}


def build(db: Path, requests: int) -> tuple[list[str], int]:
    """The heavy workload's rows in ``db``, as the writer leaves them; returns the trace ids and the
    span count."""
    import duckdb
    import pyarrow as pa

    from reach_collector.ingest.decode import PROTOBUF, parse
    from reach_collector.ingest.rows import flatten
    from reach_collector.store.schema import COMPACT, DDL, PART_INSERT

    table = pa.concat_tables(
        [flatten(parse(b, PROTOBUF)).table for b in make_bodies(requests, 512, heavy=True)]
    )
    con = duckdb.connect(str(db))
    for statement in DDL:
        con.execute(statement)
    for offset in range(0, table.num_rows, 65_536):
        batch = table.slice(offset, 65_536)  # noqa: F841 - read by DuckDB's replacement scan
        con.execute("BEGIN TRANSACTION")
        con.execute("INSERT INTO spans SELECT * FROM batch")
        con.execute(PART_INSERT.format(batch="batch"))
        con.execute(COMPACT)
        con.execute("DELETE FROM trace_parts")
        con.execute("COMMIT")
    con.execute("CHECKPOINT")
    con.close()
    return sorted(set(table.column("trace_id").to_pylist())), table.num_rows


def the_collectors_read(db: Path, ids: list[str]) -> dict[str, Timings]:
    from reach_collector.query.evaluations import for_trace
    from reach_collector.query.views import trace_body
    from reach_collector.store.duckdb_store import DuckDBStore

    store = DuckDBStore(db, threads=1)  # the collector's default: one DuckDB thread
    try:
        rows = {trace_id: store.trace_spans(trace_id) for trace_id in ids}
        return {
            "trace_spans (time range, then the span read)": _timed(ids, store.trace_spans),
            "for_trace (the evaluations query)": _timed(ids, lambda t: for_trace(store, t, rows[t])),  # type: ignore[arg-type]
            "trace_body (the JSON)": _timed(ids, lambda t: trace_body(t, rows[t])),  # type: ignore[arg-type]
        }
    finally:
        store.close()


def the_statements(db: Path, ids: list[str]) -> tuple[dict[str, Timings], list[tuple[float, str]]]:
    import duckdb

    from reach_collector.store.schema import SPAN_NAMES

    con = duckdb.connect(str(db), read_only=True)
    con.execute("SET threads = 1")
    bounds = {
        t: con.execute("SELECT first_start_ns, last_end_ns FROM traces WHERE trace_id = ?", [t]).fetchall()[0]
        for t in ids
    }
    rowids = {
        t: [r[0] for r in con.execute("SELECT rowid FROM spans WHERE trace_id = ?", [t]).fetchall()]
        for t in ids
    }

    def read(columns: list[str]) -> Callable[[str], Any]:
        sql = f"SELECT {', '.join(columns)} FROM spans WHERE trace_id = ? AND start_ns BETWEEN ? AND ?"
        return lambda t: con.execute(sql, [t, *bounds[t]]).fetchall()

    def by_rowid(t: str) -> Any:
        low, high = min(rowids[t]), max(rowids[t])
        sql = f"SELECT {', '.join(SPAN_NAMES)} FROM spans WHERE rowid BETWEEN {low} AND {high}"
        return con.execute(sql).fetchall()

    out = {
        "the time range (lookup tables)": _timed(
            ids, lambda t: con.execute("SELECT first_start_ns FROM traces WHERE trace_id = ?", [t]).fetchall()
        ),
        f"span read, all {len(SPAN_NAMES)} columns": _timed(ids, read(list(SPAN_NAMES))),
        "span read, span_id alone": _timed(ids, read(["span_id"])),
        f"the same rows by row id, all {len(SPAN_NAMES)} columns": _timed(ids, by_rowid),
    }
    few = ids[: max(20, len(ids) // 5)]
    per_column = [(_timed(few, read([c]))["p50"], c) for c in SPAN_NAMES]
    con.close()
    return out, sorted(per_column, reverse=True)


def through_an_index(db: Path, ids: list[str], spans: int) -> tuple[dict[str, Timings], str]:
    """An ART index on spans.trace_id, on a copy of ``db``: the read through it, its size, and a
    read through it and one that scans, each started while a checkpoint runs."""
    import duckdb

    from reach_collector.store.schema import SPAN_NAMES

    copy = db.with_name("indexed.duckdb")
    shutil.copy(db, copy)
    con = duckdb.connect(str(copy))
    con.execute("SET threads = 1")
    con.execute("SET checkpoint_threshold = '16GB'")
    started = time.perf_counter()
    con.execute("CREATE INDEX spans_trace_id ON spans (trace_id)")
    built = time.perf_counter() - started
    size = sum(
        r[0]
        for r in con.execute(
            "SELECT memory_usage_bytes FROM duckdb_memory() WHERE tag = 'ART_INDEX'"
        ).fetchall()
    )
    sql = f"SELECT {', '.join(SPAN_NAMES)} FROM spans WHERE trace_id = ? ORDER BY start_ns, span_id"
    out = {
        "span read through the index, all columns": _timed(ids, lambda t: con.execute(sql, [t]).fetchall())
    }
    # Rows appended since the last checkpoint, so that the next one has work to do.
    more = con.sql("SELECT * FROM spans LIMIT 200000").to_arrow_table()  # noqa: F841
    con.execute("INSERT INTO spans SELECT * FROM more")
    scanning = con.cursor()
    scanning.execute("SET SESSION index_scan_max_count = 0")
    scanning.execute("SET SESSION index_scan_percentage = 0")
    held: dict[str, float] = {}
    checkpoint: list[float] = []

    def run_checkpoint() -> None:
        began = time.perf_counter()
        con.cursor().execute("CHECKPOINT")
        checkpoint.append(time.perf_counter() - began)

    (low, high) = con.execute(
        "SELECT first_start_ns, last_end_ns FROM traces WHERE trace_id = ?", [ids[0]]
    ).fetchall()[0]
    bounded = f"SELECT {', '.join(SPAN_NAMES)} FROM spans WHERE trace_id = ? AND start_ns BETWEEN ? AND ?"
    reads = (
        ("through the index", con.cursor(), sql, [ids[0]]),
        ("scanning", scanning, bounded, [ids[0], low, high]),
    )
    for label, cursor, statement, params in reads:
        con.execute("INSERT INTO spans SELECT * FROM more")
        writer = threading.Thread(target=run_checkpoint)
        writer.start()
        time.sleep(0.05)
        began = time.perf_counter()
        cursor.execute(statement, params).fetchall()
        held[label] = (time.perf_counter() - began) * 1000
        writer.join()
    con.close()
    note = (
        f"ART index on spans.trace_id over {spans:,} spans: built in {built:.2f} s,"
        f" {size / 2**20:.1f} MiB in memory; a span read started 50 ms into a checkpoint"
        f" ({checkpoint[0]:.2f} s, {checkpoint[1]:.2f} s): {held['through the index']:.1f} ms through"
        f" the index, {held['scanning']:.1f} ms scanning (index scans off, within the trace's time range)"
    )
    return out, note


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=800, help="heavy requests of 512 spans in the store")
    parser.add_argument("--lookups", type=int, default=300, help="random traces looked up in each phase")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs; command: python bench/lookup_cost.py {' '.join(sys.argv[1:])}".rstrip())
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "lookup.duckdb"
        trace_ids, spans = build(db, args.requests)
        ids = random.Random(7).sample(trace_ids, min(args.lookups, len(trace_ids)))
        size = db.stat().st_size / 2**20
        print(f"{spans:,} heavy spans, {len(trace_ids):,} traces, {size:.0f} MiB; checkpointed")
        print("\n| phase | p50 ms | p99 ms |\n|---|---|---|")
        statements, per_column = the_statements(db, ids)
        indexed, note = through_an_index(db, ids, spans)
        for name, t in {**the_collectors_read(db, ids), **statements, **indexed}.items():
            print(f"| {name} | {t['p50']:.2f} | {t['p99']:.2f} |")
        print("\nspan read of one column, p50 ms (the dearest six, then the cheapest):")
        print(", ".join(f"{c} {ms:.2f}" for ms, c in [*per_column[:6], per_column[-1]]))
        print(note)
        print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

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
- the span read through an ART index on the lower-cased trace id (built here, on copies): its
  size, the read through it beside the time-range read for traces of 20 to 1 000 spans, whether a
  filter on ``trace_id`` itself still scans, what each read waits for while a checkpoint runs, and
  what the index adds to deleting old spans (retention).

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
from ingest import _percentile

Timings = dict[str, float]


def _timed(ids: list[str], run: Callable[[str], Any]) -> Timings:
    """p50/p99 milliseconds of ``run(trace_id)`` over ``ids`` (after five warm-up calls)."""
    for trace_id in ids[:5]:
        run(trace_id)
    times = []
    for trace_id in ids:
        started = time.perf_counter()
        run(trace_id)
        times.append((time.perf_counter() - started) * 1000)
    return {"p50": _percentile(times, 0.5), "p99": _percentile(times, 0.99)}


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


def _median_ms(con: Any, sql: str, params: list[Any], times: int = 9) -> float:
    spent = []
    for _ in range(times):
        began = time.perf_counter()
        con.execute(sql, params).fetchall()
        spent.append((time.perf_counter() - began) * 1000)
    return _percentile(spent, 0.5)


def through_an_index(db: Path, ids: list[str], spans: int) -> tuple[dict[str, Timings], list[str]]:
    """An ART index on the spans' lower-cased trace id, on copies of ``db``: what it costs to build
    and keep, the read through it for traces of growing size beside the time-range read, whether
    a filter on ``trace_id`` itself still scans, what a read through it and one that scans wait for
    while a checkpoint runs, and what it adds to deleting old spans."""
    import duckdb

    from reach_collector.store.schema import SPAN_NAMES

    columns = ", ".join(SPAN_NAMES)
    by_index = f"SELECT {columns} FROM spans WHERE lower(trace_id) = ? ORDER BY start_ns, span_id"
    by_range = (
        f"SELECT {columns} FROM spans WHERE trace_id = ? AND start_ns BETWEEN ? AND ?"
        " ORDER BY start_ns, span_id"
    )
    copy, bare = db.with_name("indexed.duckdb"), db.with_name("bare.duckdb")
    shutil.copy(db, copy)
    shutil.copy(db, bare)
    con = duckdb.connect(str(copy))
    con.execute("SET threads = 1")
    con.execute("SET checkpoint_threshold = '16GB'")
    started = time.perf_counter()
    con.execute("CREATE INDEX spans_trace ON spans ((lower(trace_id)))")
    built = time.perf_counter() - started
    memory = "SELECT sum(memory_usage_bytes) FROM duckdb_memory() WHERE tag = 'ART_INDEX'"
    size = int(con.execute(memory).fetchall()[0][0] or 0)
    out = {"span read through the index": _timed(ids, lambda t: con.execute(by_index, [t]).fetchall())}
    plan = con.execute("EXPLAIN ANALYZE SELECT span_id FROM spans WHERE trace_id = ?", [ids[0]]).fetchall()
    scans = "Sequential Scan" in plan[0][1]
    # Traces of growing size: copies of consecutive rows under new ids, checkpointed.
    sizes = []
    first = spans // 4  # the copied rows: a quarter of the way into the table
    for n in (n for n in (20, 60, 250, 1000) if first + 2 * n <= spans):
        trace_id = f"{n:032x}"
        con.execute(
            f"INSERT INTO spans SELECT * REPLACE ('{trace_id}' AS trace_id) FROM spans"
            f" WHERE rowid BETWEEN {first + n} AND {first + 2 * n - 1}"
        )
        sizes.append((n, trace_id))
    con.execute("CHECKPOINT")
    by_size = []
    for n, trace_id in sizes:
        low, high = con.execute(
            "SELECT min(start_ns), max(start_ns) FROM spans WHERE trace_id = ?", [trace_id]
        ).fetchall()[0]
        scan = _median_ms(con, by_range, [trace_id, low, high])
        index = _median_ms(con, by_index, [trace_id])
        by_size.append(f"{n} spans {index:.1f} / {scan:.1f}")
    # Rows appended since the last checkpoint, so that the next one has work to do.
    more = con.sql("SELECT * FROM spans LIMIT 200000").to_arrow_table()  # noqa: F841
    held: dict[str, float] = {}
    checkpoint: list[float] = []

    def run_checkpoint() -> None:
        began = time.perf_counter()
        con.cursor().execute("CHECKPOINT")
        checkpoint.append(time.perf_counter() - began)

    (low, high) = con.execute(
        "SELECT first_start_ns, last_end_ns FROM traces WHERE trace_id = ?", [ids[0]]
    ).fetchall()[0]
    for label, statement, params in (("index", by_index, [ids[0]]), ("range", by_range, [ids[0], low, high])):
        con.execute("INSERT INTO spans SELECT * FROM more")
        writer = threading.Thread(target=run_checkpoint)
        writer.start()
        time.sleep(0.05)
        began = time.perf_counter()
        con.cursor().execute(statement, params).fetchall()
        held[label] = (time.perf_counter() - began) * 1000
        writer.join()
    con.close()
    deletes = {}
    for label, path in (("index", copy), ("bare", bare)):
        con = duckdb.connect(str(path))
        middle = con.execute("SELECT quantile_disc(start_ns, 0.5) FROM spans").fetchall()[0][0]
        began = time.perf_counter()
        deleted = con.execute("DELETE FROM spans WHERE start_ns < ?", [middle]).fetchall()[0][0]
        deletes[label] = (time.perf_counter() - began, deleted)
        con.close()
    notes = [
        f"ART index on lower(trace_id) over {spans:,} spans: built in {built:.2f} s,"
        f" {size / 2**20:.1f} MiB in memory; a filter on trace_id itself"
        f" {'still scans' if scans else 'reads through it'}",
        "read through the index / by time range, p50 ms: " + ", ".join(by_size),
        f"a span read started 50 ms into a checkpoint ({checkpoint[0]:.2f} s, {checkpoint[1]:.2f} s):"
        f" {held['index']:.1f} ms through the index, {held['range']:.1f} ms by time range",
        f"deleting the older half ({deletes['bare'][1]:,} spans): {deletes['index'][0]:.2f} s with the"
        f" index, {deletes['bare'][0]:.2f} s without",
    ]
    return out, notes


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
        indexed, notes = through_an_index(db, ids, spans)
        for name, t in {**the_collectors_read(db, ids), **statements, **indexed}.items():
            print(f"| {name} | {t['p50']:.2f} | {t['p99']:.2f} |")
        print("\nspan read of one column, p50 ms (the dearest six, then the cheapest):")
        print(", ".join(f"{c} {ms:.2f}" for ms, c in [*per_column[:6], per_column[-1]]))
        print("\n".join(notes))
        print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

"""Diagnosis benchmark (SPEC §17): how fast ``/api/causes`` answers over a 15-minute window at 10 M
spans, and how long one trace's cause takes.

The store: the metrics benchmark's requests (bench/metrics.py: a workflow root, a triage agent
handing off to one of four targets, LLM and tool calls, 12 requests a second), 3 % of which fail —
there the target's last tool call, its agent and the root are ERROR (so a window of 15 minutes holds
about 320 failed traces, past the 200 a window's causes analyse). Written through the store's own
write path.

    python bench/diagnosis.py [--spans 10000000] [--runs 50] [--db PATH]

``--db`` keeps the generated store (10 M spans take minutes to write) and reuses it next time.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from reach_collector.query.cause import trace_cause
from reach_collector.query.causes import window_causes
from reach_collector.query.pricing import PriceTable
from reach_collector.store import schema
from reach_collector.store.duckdb_store import DuckDBStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
import metrics as spans_bench  # the sibling benchmark's span generator

PRICES = PriceTable({"fake-model": {"input": 0.15, "output": 0.6}})
WINDOW_S = 900
_ROOT, _TARGET, _LAST_TOOL = 0, 5, 9  # positions in spans_bench.TEMPLATE


def batch(first: int, n: int, t0: int, rng: np.random.Generator) -> pa.Table:
    """The metrics benchmark's requests; where its target agent failed, the failure starts at the
    target's last tool call and reaches the root."""
    table = spans_bench.batch(first, n, t0, rng)
    status = table.column("status_code").to_numpy(zero_copy_only=False)
    failed = np.repeat(status.reshape(-1, spans_bench.N)[:, _TARGET] == 2, spans_bench.N)
    pos = np.tile(np.arange(spans_bench.N), n)
    error = failed & np.isin(pos, (_ROOT, _TARGET, _LAST_TOOL))
    for column, value, other in (
        ("status_code", pa.scalar(2, pa.uint8()), table.column("status_code")),
        ("error_type", pa.scalar("billing.InvoiceTimeout"), table.column("error_type")),
    ):
        i = table.schema.get_field_index(column)
        table = table.set_column(i, column, pc.if_else(pa.array(error), value, other))
    return table


def build(db: Path, n_spans: int) -> int:
    """Fill ``db`` as the writer would; returns the newest span's end."""
    store = DuckDBStore(db)
    side = duckdb.connect()
    for statement in schema.DDL:
        side.execute(statement)
    rng = np.random.default_rng(17)
    n_traces = n_spans // spans_bench.N
    t0 = time.time_ns() - (n_traces * spans_bench.S) // spans_bench.TRACES_PER_S
    last_end = 0
    started = time.perf_counter()
    for first in range(0, n_traces, spans_bench.BATCH_TRACES):
        table = batch(first, min(spans_bench.BATCH_TRACES, n_traces - first), t0, rng)
        last_end = max(last_end, int(pc.max(table.column("end_ns")).as_py()))
        store.write(table, spans_bench._parts(side, table))
        store.maintain(idle=False)
        if first // spans_bench.BATCH_TRACES % 40 == 0:
            done = (first + spans_bench.BATCH_TRACES) * spans_bench.N
            print(f"  {done:>11,} spans  {time.perf_counter() - started:6.1f}s", file=sys.stderr)
    store.close()
    return last_end


def _newest_end(db: Path) -> int:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return int(con.execute("SELECT max(end_ns) FROM spans").fetchall()[0][0])
    finally:
        con.close()


def measure(db: Path, now_ns: int, runs: int) -> dict[str, Any]:
    store = spans_bench.served_store(db)
    out: dict[str, Any] = {"spans": store.count_spans()}
    body = window_causes(store, now_ns, WINDOW_S, PRICES)
    out["failed traces analysed"], out["sampled"] = body["failed_traces"], body["sampled"]
    out["top cause"] = body["summary"]
    out["causes 15m"] = spans_bench.time_runs(lambda: window_causes(store, now_ns, WINDOW_S, PRICES), runs)
    trace_id = body["causes"][0]["example_trace_ids"][0]
    out["trace cause"] = spans_bench.time_runs(
        lambda: trace_cause(trace_id, store.trace_spans(trace_id) or [], PRICES), runs
    )
    store.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--db", default=None, help="keep the generated store here and reuse it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(args.db) if args.db else Path(tmp) / "diagnosis.duckdb"
        now_ns = _newest_end(db) if db.exists() else build(db, args.spans)
        out = measure(db, now_ns, args.runs)
    for key, value in out.items():
        if isinstance(value, tuple):
            print(f"{key:<24} p50 {value[0]:8.2f} ms   p99 {value[1]:8.2f} ms")
        else:
            print(f"{key:<24} {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

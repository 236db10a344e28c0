"""Diagnosis benchmark (SPEC §17): how often the cause is right, and how fast it comes.

Accuracy (the default): a seeded fault-injection corpus (bench/_faults.py) written
to a store — per trace, whether the origin found is the injected span, and whether its agent is
the faulty one, top-1, beside a baseline (the agent with the most ERROR spans; top-1 and top-3);
per window (a mix of causes, one dominant, plus red herrings), whether the ranking's first cause
(top-1) or one of its first three (top-3) is the dominant one, beside the baseline's agent. The
corpus is built on the same model of propagation and absorption the diagnosis implements (an
absorbed error has a parent that did not fail, or a later sibling retry that did not), so it checks
the implementation against the definitions, not the definitions against real incidents.

Timing (``--timing``): ``/api/causes``'s query over a 15-minute window and one trace's cause
(its rows read by id), in process. The store is the metrics benchmark's requests
(bench/metrics.py: a workflow root, a triage agent handing off to one of four targets, LLM and
tool calls, 12 requests a second), 3 % of which fail — there the target's last tool call, its
agent and the root are ERROR (so a window of 15 minutes holds about 320 failed traces, past the
200 a window's causes analyse). Written through the store's own write path.

    python bench/diagnosis.py [--traces 2000] [--windows 40] [--seed 7]
    python bench/diagnosis.py --timing [--spans 10000000] [--runs 50] [--db PATH]

``--db`` keeps the generated store (10 M spans take minutes to write) and reuses it next time.
"""

from __future__ import annotations

import argparse
import random
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
import _faults as faults  # the fault-injection corpus
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


def _store(traces: list[faults.Trace]) -> DuckDBStore:
    """An in-memory store holding ``traces``, written as the collector's writer writes."""
    store = DuckDBStore(":memory:")
    side = duckdb.connect()
    for statement in schema.DDL:
        side.execute(statement)
    table = pa.Table.from_pylist([r for t in traces for r in t.rows], schema=schema.ARROW_SCHEMA)
    store.write(table, spans_bench._parts(side, table))
    side.close()
    return store


def per_trace(n: int, seed: int) -> dict[str, dict[str, float]]:
    """Per fault kind (and ``all``): origin span right, origin agent right (ours, top-1), and the
    baseline's agent top-1 and top-3, over ``n`` failed traces."""
    rng = random.Random(seed)
    now = time.time_ns()
    traces = [
        faults.build(rng, f"{rng.getrandbits(128):032x}", now - (n - i) * 10**9, faults.random_fault(rng))
        for i in range(n)
    ]
    store = _store(traces)
    tally: dict[str, list[int]] = {}
    for t in traces:
        assert t.fault is not None
        found = trace_cause(t.trace_id, store.trace_spans(t.trace_id) or [], PRICES)
        origin = found.origin or {}
        guess = faults.baseline(t.rows)
        hits = [
            origin.get("span_id") == t.origin,
            origin.get("agent") == t.fault.agent and origin.get("kind") == t.fault.kind,
            guess[:1] == [t.fault.agent],
            t.fault.agent in guess[:3],
        ]
        for key in (t.fault.kind, "all"):
            row = tally.setdefault(key, [0, 0, 0, 0, 0])
            row[0] += 1
            for i, hit in enumerate(hits):
                row[i + 1] += hit
    store.close()
    return {
        kind: {"traces": r[0], "span": r[1] / r[0], "agent+kind": r[2] / r[0], "base@1": r[3] / r[0],
               "base@3": r[4] / r[0]}
        for kind, r in sorted(tally.items(), key=lambda kv: (kv[0] == "all", kv[0]))
    }  # fmt: skip


def per_window(windows: int, seed: int, failed: int = 60) -> dict[str, float]:
    """Over ``windows`` windows of ``failed`` failed traces (a dominant cause in 40 %, two others in
    25 % and 15 %, the rest random) and as many requests that did not fail: the ranking's top-1
    and top-3 against the dominant cause, and the baseline's agent."""
    rng = random.Random(seed)
    top1 = top3 = base = 0
    for _ in range(windows):
        now = time.time_ns()
        causes = [faults.random_fault(rng) for _ in range(3)]
        while len({(c.agent, c.kind, c.name) for c in causes}) < 3 or len({c.agent for c in causes}) < 3:
            causes = [faults.random_fault(rng) for _ in range(3)]
        plan: list[faults.Fault | None] = []
        for cause, share in zip(causes, (0.4, 0.25, 0.15), strict=True):
            plan += [cause] * int(failed * share)
        plan += [faults.random_fault(rng) for _ in range(failed - len(plan))]
        plan += [None] * failed
        rng.shuffle(plan)
        traces = [
            faults.build(rng, f"{rng.getrandbits(128):032x}", now - (len(plan) - i) * 2 * 10**9, f)
            for i, f in enumerate(plan)
        ]
        store = _store(traces)
        body = window_causes(store, now + 10**9, WINDOW_S, PRICES)
        ranked = [(c["agent"], c["kind"], c["name"]) for c in body["causes"]]
        truth = (causes[0].agent, causes[0].kind, causes[0].name)
        top1 += ranked[:1] == [truth]
        top3 += truth in ranked[:3]
        base += faults.baseline([r for t in traces for r in t.rows])[:1] == [causes[0].agent]
        store.close()
    return {
        "windows": windows,
        "top-1": top1 / windows,
        "top-3": top3 / windows,
        "baseline@1": base / windows,
    }


def accuracy(n: int, windows: int, seed: int) -> None:
    print(f"Per trace ({n} failed traces, seed {seed}): origin span found; origin agent and kind; baseline")
    print(f"{'kind':<18}{'traces':>7}{'span':>8}{'agent+kind':>12}{'base@1':>9}{'base@3':>9}")
    for kind, r in per_trace(n, seed).items():
        print(
            f"{kind:<18}{r['traces']:>7}{r['span']:>8.1%}{r['agent+kind']:>12.1%}"
            f"{r['base@1']:>9.1%}{r['base@3']:>9.1%}"
        )
    w = per_window(windows, seed)
    print(f"\nPer window ({windows} windows of 60 failed traces and 60 that did not fail):")
    print(f"ranking top-1 {w['top-1']:.1%}  top-3 {w['top-3']:.1%}  baseline top-1 {w['baseline@1']:.1%}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timing", action="store_true", help="time /api/causes at --spans instead")
    parser.add_argument("--traces", type=int, default=2000)
    parser.add_argument("--windows", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--spans", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--db", default=None, help="keep the generated store here and reuse it")
    args = parser.parse_args()
    if not args.timing:
        accuracy(args.traces, args.windows, args.seed)
        return 0
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

"""Collector durable-ingest benchmark: realistic multi-agent OTLP protobuf batches over HTTP.

Two workloads, side by side in one run (``--workloads``):

- ``standard``: 8-span multi-agent traces (workflow, two agents, chat, tools, a handoff), a
  five-attribute resource, ≈ 355 bytes per span on the wire;
- ``heavy``: 19-span traces (workflow, guardrail, three agents with two LLM calls and two tools
  each, two handoffs), more attributes per span, events (LLM choices, tool results, handoff
  transitions, exceptions) and a production-sized resource, ≈ 640 bytes per span.

For each workload and client count, in one run: (a) DuckDB's own Arrow insert of the same span rows
into the same schema (64k-row transactions at DuckDB's own checkpoint settings + a final
checkpoint), right before (b) the collector end to end — a subprocess collector at its defaults on
a fresh DuckDB file, 1 and 4 concurrent client processes posting 512-span requests, each answered
only after commit — with the compiled decode path (``--paths compiled pure`` adds the pure-Python reference,
``REACH_COLLECTOR_PURE_PYTHON=1``, which is what an install without a C compiler runs). While the
clients post, one more process asks ``GET /api/traces/{id}`` for random traces already
acknowledged (``--lookups-per-s``) and reports the p50/p99. Prints spans/s and the ratio (§7:
≥ 50 000 spans/s, ≥ 0.5× the raw insert; trace-by-id p99 < 20 ms).

The default (800 requests per workload, about 410 k spans each) is sustained ingest: long enough
that both sides pass through several checkpoints (the collector's come every 122 880 spans), as a
store that runs for days does.

    python bench/ingest.py [--workloads standard heavy] [--requests 800] [--clients 1 4]

``--baseline-rev REV`` measures the collector of another revision beside this tree's, in the same
run: REV's source is exported into a temporary directory (its compiled decoder built there), and
for each workload and client count the raw insert runs once, then both collectors, one after the
other (the order alternating from cell to cell, so drift in the machine's load falls on both
sides), with the same clients, lookups and bodies. A table at the end puts them side by side with
the ratios, the raw insert and the load average (``os.getloadavg``) at each run.

    python bench/ingest.py --baseline-rev dfb05a0
"""

from __future__ import annotations

import argparse
import http.client
import multiprocessing as mp
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the classes behind the context's factories (mp.Queue etc. are functions)
    from multiprocessing.queues import Queue
    from multiprocessing.sharedctypes import SynchronizedArray
    from multiprocessing.synchronize import Barrier, Event

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _spans import make_bodies
from peers.harness import wait_healthy
from soak import child_pids

WORKLOADS = {"standard": False, "heavy": True}


def raw_insert(bodies: list[bytes], db: Path, batch_rows: int = 65_536) -> tuple[int, float]:
    import duckdb
    import pyarrow as pa

    from reach_collector.ingest.decode import PROTOBUF, parse
    from reach_collector.ingest.rows import flatten
    from reach_collector.store.schema import DDL

    table = pa.concat_tables([flatten(parse(b, PROTOBUF)).table for b in bodies])
    con = duckdb.connect(str(db))
    for statement in DDL:
        con.execute(statement)
    started = time.perf_counter()
    for offset in range(0, table.num_rows, batch_rows):
        batch = table.slice(offset, batch_rows)  # noqa: F841 - read by DuckDB's replacement scan
        con.execute("BEGIN TRANSACTION")
        con.execute("INSERT INTO spans SELECT * FROM batch")
        con.execute("COMMIT")
    con.execute("CHECKPOINT")
    elapsed = time.perf_counter() - started
    con.close()
    return table.num_rows, elapsed


def collect_statuses(out: Queue[dict[int, int]], clients: int) -> dict[int, int]:
    """Every client's {HTTP status: requests} from ``out`` (a queue each client puts one into), summed."""
    statuses: dict[int, int] = {}
    for _ in range(clients):
        for code, n in out.get().items():
            statuses[code] = statuses.get(code, 0) + n
    return statuses


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _client(
    port: int,
    bodies: list[bytes],
    ready: Barrier,
    out: Queue[dict[int, int]],
    progress: SynchronizedArray[int],
    slot: int,
) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    statuses: dict[int, int] = {}
    ready.wait()
    for done, body in enumerate(bodies, 1):
        while True:
            conn.request("POST", "/v1/traces", body, {"content-type": "application/x-protobuf"})
            response = conn.getresponse()
            response.read()
            statuses[response.status] = statuses.get(response.status, 0) + 1
            if response.status in (429, 503):
                time.sleep(float(response.getheader("retry-after") or 1) / 10)
                continue
            break
        progress[slot] = done  # this share's first ``done`` bodies are acknowledged
    out.put(statuses)


def _lookups(
    port: int,
    shares: list[list[list[str]]],
    progress: SynchronizedArray[int],
    stop: Event,
    per_second: float,
    out: Queue[tuple[list[float], dict[int, int]]],
) -> None:
    """GET /api/traces/{id} for random acknowledged traces, ``per_second`` a second, until ``stop``."""
    rng = random.Random(3)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    interval = 1.0 / per_second
    next_at = time.perf_counter()
    while not stop.is_set():
        acked = [(i, progress[i]) for i in range(len(shares)) if progress[i]]
        if acked:
            share, done = rng.choice(acked)
            trace_id = rng.choice(shares[share][rng.randrange(done)])
            started = time.perf_counter()
            conn.request("GET", f"/api/traces/{trace_id}")
            response = conn.getresponse()
            response.read()
            latencies.append(time.perf_counter() - started)
            statuses[response.status] = statuses.get(response.status, 0) + 1
        next_at += interval
        time.sleep(max(0.0, next_at - time.perf_counter()))
    out.put((latencies, statuses))


def _cpu_seconds(pid: int) -> tuple[float, float]:
    """CPU seconds (user + system) of a process and of its live children, from /proc (0 elsewhere)."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def one(p: str) -> float:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / tick

    return one(str(pid)), sum(one(str(c)) for c in child_pids(pid))


@dataclass
class Run:
    elapsed: float
    statuses: dict[int, int]
    stored: int
    cpu: tuple[float, float]
    lookup_ms: list[float]
    lookup_statuses: dict[int, int]
    load: float = 0.0  # the 1-minute load average as the run ended


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def collector_ingest(
    bodies: list[bytes],
    trace_ids: list[list[str]],
    clients: int,
    db: Path,
    pure_python: bool = False,
    lookups_per_s: float = 10.0,
    source: Path | None = None,
) -> Run:
    """The collector of this tree, or of ``source`` (an exported revision, see ``baseline_tree``)."""
    port = _free_port()
    env = _collector_env(source, pure_python)
    proc = subprocess.Popen(
        [sys.executable, "-m", "reach_collector", "--db", str(db), "--port", str(port), "--grpc-port", "0"],
        stdout=subprocess.DEVNULL,
        env=env,
    )
    try:
        wait_healthy(port, proc, 30)
        ctx = mp.get_context("fork")
        barrier = ctx.Barrier(clients + 1)
        out: Queue[dict[int, int]] = ctx.Queue()
        lookup_out: Queue[tuple[list[float], dict[int, int]]] = ctx.Queue()
        progress = ctx.Array("i", clients)
        stop = ctx.Event()
        shares = [bodies[i::clients] for i in range(clients)]
        id_shares = [trace_ids[i::clients] for i in range(clients)]
        workers = [
            ctx.Process(target=_client, args=(port, share, barrier, out, progress, slot))
            for slot, share in enumerate(shares)
        ]
        for w in workers:
            w.start()
        querier = None
        if lookups_per_s > 0:
            querier = ctx.Process(
                target=_lookups, args=(port, id_shares, progress, stop, lookups_per_s, lookup_out)
            )
            querier.start()
        cpu_before = _cpu_seconds(proc.pid)
        barrier.wait()
        started = time.perf_counter()
        statuses = collect_statuses(out, len(workers))
        elapsed = time.perf_counter() - started
        cpu_after = _cpu_seconds(proc.pid)
        cpu = (cpu_after[0] - cpu_before[0], cpu_after[1] - cpu_before[1])
        stop.set()
        latencies, lookup_statuses = lookup_out.get() if querier is not None else ([], {})
        for w in [*workers, *([querier] if querier is not None else [])]:
            w.join()
    finally:
        proc.terminate()
        proc.wait(60)
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    row = con.execute("SELECT count(*) FROM spans").fetchone()
    stored = int(row[0]) if row else 0
    con.close()
    return Run(
        elapsed, statuses, stored, cpu, [x * 1000 for x in latencies], lookup_statuses, os.getloadavg()[0]
    )


def _collector_env(source: Path | None, pure_python: bool) -> dict[str, str]:
    env = dict(os.environ, REACH_COLLECTOR_PURE_PYTHON="1" if pure_python else "0")
    if source is not None:  # ahead of the installed tree: that revision's packages are imported
        env["PYTHONPATH"] = os.pathsep.join(
            [str(source / "collector"), str(source), *filter(None, [os.environ.get("PYTHONPATH")])]
        )
    return env


def baseline_tree(rev: str, into: Path) -> tuple[Path, str]:
    """Revision ``rev`` of this repository exported into ``into`` with its compiled decoder built
    in place; returns the tree and the revision's short hash."""
    repo = Path(__file__).resolve().parent.parent
    short = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--short", f"{rev}^{{commit}}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    into.mkdir(parents=True)
    archive = subprocess.Popen(
        ["git", "-C", str(repo), "archive", "--format=tar", short], stdout=subprocess.PIPE
    )
    subprocess.run(["tar", "-x", "-C", str(into)], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise RuntimeError(f"could not export revision {rev}")
    built = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=into, capture_output=True, text=True
    )
    if built.returncode != 0:
        raise RuntimeError(f"could not build revision {rev}'s compiled decoder:\n{built.stderr}")
    where = subprocess.run(
        [
            sys.executable,
            "-c",
            "import reach_collector.ingest.fast as f; print(f.__file__, f.why_off() or 'compiled')",
        ],
        env=_collector_env(into, False),
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    if not where or not Path(where[0]).resolve().is_relative_to(into.resolve()):
        raise RuntimeError(f"the baseline's packages are not the ones imported: {where}")
    if where[-1] != "compiled":
        raise RuntimeError(f"the baseline's compiled decoder did not build: {' '.join(where[1:])}")
    return into, short


def _trace_ids(body: bytes) -> list[str]:
    from reach_collector.ingest.decode import PROTOBUF, parse

    ids = {
        s.trace_id.hex()
        for rs in parse(body, PROTOBUF).resource_spans
        for ss in rs.scope_spans
        for s in ss.spans
    }
    return sorted(ids)


def _line(
    workload: str, label: str, clients: int, spans: int, raw_rate: float, run: Run, lookups: bool
) -> str:
    rate = spans / run.elapsed
    main_cpu, decoder_cpu = run.cpu
    looked = (
        f"; trace-by-id during ingest p50 {_percentile(run.lookup_ms, 0.5):.1f} ms, "
        f"p99 {_percentile(run.lookup_ms, 0.99):.1f} ms "
        f"({len(run.lookup_ms)} lookups, statuses {run.lookup_statuses})"
        if lookups
        else ""
    )
    return (
        f"[{workload}] collector durable ingest ({label}), {clients} client(s): "
        f"{rate:,.0f} spans/s ({rate / raw_rate:.2f}x the raw insert's {raw_rate:,.0f}); "
        f"statuses {run.statuses}; "
        f"stored {run.stored}/{spans}; CPU µs/span: collector process "
        f"{main_cpu / spans * 1e6:.1f}, decoder processes {decoder_cpu / spans * 1e6:.1f}"
        f"{looked}; load average {run.load:.2f}"
    )


@dataclass
class Cell:
    workload: str
    path: str
    clients: int
    spans: int
    raw_rate: float
    runs: dict[str, Run]  # by side: "before" (the baseline revision), "after" (this tree)


def _table(cells: list[Cell], sides: list[str], lookups: bool) -> list[str]:
    """Markdown rows: each cell's spans/s and ratio to the raw insert per side, the trace-by-id p99,
    the collector's CPU per span, the raw insert and the load averages."""

    def one(cell: Cell, side: str) -> str:
        run = cell.runs[side]
        rate = cell.spans / run.elapsed
        return (
            f"{rate / 1000:.1f} k = **{rate / cell.raw_rate:.2f}×** ({run.cpu[0] / cell.spans * 1e6:.1f} µs)"
        )

    def p99(cell: Cell, side: str) -> str:
        return f"{_percentile(cell.runs[side].lookup_ms, 0.99):.1f}" if lookups else "-"

    head = ["workload, clients", *sides]
    if len(sides) == 2:
        head.append("after / before")
    head += [f"trace-by-id p99 ms ({' / '.join(sides)})", "raw insert", "load average"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for cell in cells:
        row = [f"{cell.workload}{'' if cell.path == 'compiled' else ' (pure)'}, {cell.clients}"]
        row += [one(cell, side) for side in sides]
        if len(sides) == 2:
            before, after = (cell.runs[side].elapsed for side in sides)
            row.append(f"{before / after:.2f}×")
        row.append(" / ".join(p99(cell, side) for side in sides))
        row.append(f"{cell.raw_rate / 1000:.1f} k")
        row.append(" / ".join(f"{cell.runs[side].load:.2f}" for side in sides))
        rows.append("| " + " | ".join(row) + " |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workloads", nargs="+", choices=list(WORKLOADS), default=list(WORKLOADS))
    parser.add_argument("--requests", type=int, default=800, help="requests per workload")
    parser.add_argument("--spans-per-request", type=int, default=512)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4])
    parser.add_argument(
        "--paths",
        nargs="+",
        choices=["compiled", "pure"],
        default=["compiled"],
        help="decode paths to measure: the compiled one (if built) and the pure-Python reference",
    )
    parser.add_argument(
        "--lookups-per-s",
        type=float,
        default=10.0,
        help="trace-by-id requests a second during ingest (0: none)",
    )
    parser.add_argument(
        "--baseline-rev",
        metavar="REV",
        help='also measure the collector at this git revision ("before"), beside this tree ("after")',
    )
    args = parser.parse_args()
    from reach_collector.ingest import fast

    if "compiled" in args.paths and not fast.enabled():
        parser.error("the compiled decode path is not built here (or REACH_COLLECTOR_PURE_PYTHON is set)")
    print(f"{os.cpu_count()} CPUs; command: python bench/ingest.py {' '.join(sys.argv[1:])}".rstrip())
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    results: list[str] = []
    cells: list[Cell] = []
    lookups = args.lookups_per_s > 0
    with tempfile.TemporaryDirectory() as tmp:
        sources: dict[str, Path | None] = {"after": None}
        labels = {"after": "this tree"}
        if args.baseline_rev:
            tree, short = baseline_tree(args.baseline_rev, Path(tmp) / "baseline")
            sources = {"before": tree, "after": None}
            labels = {"before": f"before: {short}", "after": "after: this tree"}
            print(f"before: revision {short}, exported and built in a temporary directory; after: this tree")
        sides = list(sources)
        for workload in args.workloads:
            bodies = make_bodies(args.requests, args.spans_per_request, heavy=WORKLOADS[workload])
            trace_ids = [_trace_ids(b) for b in bodies]
            from reach_collector.ingest.decode import PROTOBUF, parse

            spans = sum(
                len(ss.spans)
                for b in bodies
                for rs in parse(b, PROTOBUF).resource_spans
                for ss in rs.scope_spans
            )
            print(
                f"\n[{workload}] {len(bodies)} requests, {spans} spans, "
                f"{sum(map(len, bodies)) / spans:.0f} bytes/span on the wire, "
                f"{spans / sum(map(len, trace_ids)):.0f} spans/trace"
            )
            for path in args.paths:
                for clients in args.clients:
                    # The raw insert right before each pair of collector runs: the machine's load drifts.
                    n, elapsed = raw_insert(bodies, Path(tmp) / f"raw-{workload}-{path}{clients}.duckdb")
                    raw_rate = n / elapsed
                    print(
                        f"[{workload}] raw DuckDB Arrow insert (64k-row commits + checkpoint): "
                        f"{raw_rate:,.0f} spans/s; load average {os.getloadavg()[0]:.2f}"
                    )
                    cell = Cell(workload, path, clients, spans, raw_rate, {})
                    # Alternating which side goes first, so a drift in load falls on both.
                    order = sides if len(cells) % 2 == 0 else sides[::-1]
                    for side in order:
                        cell.runs[side] = collector_ingest(
                            bodies,
                            trace_ids,
                            clients,
                            Path(tmp) / f"{workload}-{path}{clients}-{side}.duckdb",
                            pure_python=path == "pure",
                            lookups_per_s=args.lookups_per_s,
                            source=sources[side],
                        )
                        label = f"{path} decode" + (f", {labels[side]}" if len(sides) > 1 else "")
                        line = _line(workload, label, clients, spans, raw_rate, cell.runs[side], lookups)
                        print(line, flush=True)
                        results.append(line)
                    cells.append(cell)
    print("\nsummary:")
    for line in results:
        print(line)
    print(
        "\nSpans/s, the ratio to DuckDB's own Arrow insert run right before, and in brackets the "
        "collector process's CPU per span:\n"
    )
    for row in _table(cells, sides, lookups):
        print(row)


if __name__ == "__main__":
    main()

"""Collector durable-ingest benchmark: realistic multi-agent OTLP protobuf batches over HTTP.

Measures, in one run: (a) DuckDB's own Arrow insert of the same span rows into the same schema
(64k-row transactions + a final checkpoint), and (b) the collector end to end — a subprocess
collector on a fresh DuckDB file, 1, 4 and 8 concurrent client processes posting 512-span requests,
each answered only after commit — once with the compiled decode path and once with the
pure-Python reference (``REACH_COLLECTOR_PURE_PYTHON=1``), which is what an install without a C
compiler runs. Prints spans/s and the ratio (§7: ≥ 50 000 spans/s, ≥ 0.5×).

The default workload (2000 requests, about a million spans) is sustained ingest: long enough that
both sides pass through several checkpoints, as a store that runs for days does. A short run
(``--requests 300``, 150 k spans) ends before DuckDB's first automatic checkpoint, so its raw figure
is the deferred-checkpoint rate (about twice the sustained one).

    python bench/ingest.py [--requests 2000] [--spans-per-request 512] [--clients 1 4 8]
"""

from __future__ import annotations

import argparse
import http.client
import multiprocessing as mp
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _spans import make_bodies
from peers.harness import wait_healthy
from soak import child_pids


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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _client(port: int, bodies: list[bytes], ready: mp.Barrier, out: mp.Queue) -> None:  # type: ignore[type-arg]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    statuses: dict[int, int] = {}
    ready.wait()
    for body in bodies:
        while True:
            conn.request("POST", "/v1/traces", body, {"content-type": "application/x-protobuf"})
            response = conn.getresponse()
            response.read()
            statuses[response.status] = statuses.get(response.status, 0) + 1
            if response.status in (429, 503):
                time.sleep(float(response.getheader("retry-after") or 1) / 10)
                continue
            break
    out.put(statuses)


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


def collector_ingest(
    bodies: list[bytes], spans: int, clients: int, db: Path, pure_python: bool = False
) -> tuple[float, dict[int, int], int, tuple[float, float]]:
    port = _free_port()
    env = dict(os.environ, REACH_COLLECTOR_PURE_PYTHON="1" if pure_python else "0")
    proc = subprocess.Popen(
        [sys.executable, "-m", "reach_collector", "--db", str(db), "--port", str(port), "--grpc-port", "0"],
        stdout=subprocess.DEVNULL,
        env=env,
    )
    try:
        wait_healthy(port, proc, 30)
        ctx = mp.get_context("fork")
        barrier = ctx.Barrier(clients + 1)
        out: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
        shares = [bodies[i::clients] for i in range(clients)]
        workers = [ctx.Process(target=_client, args=(port, share, barrier, out)) for share in shares]
        for w in workers:
            w.start()
        cpu_before = _cpu_seconds(proc.pid)
        barrier.wait()
        started = time.perf_counter()
        statuses: dict[int, int] = {}
        for _ in workers:
            for code, n in out.get().items():
                statuses[code] = statuses.get(code, 0) + n
        elapsed = time.perf_counter() - started
        cpu_after = _cpu_seconds(proc.pid)
        cpu = (cpu_after[0] - cpu_before[0], cpu_after[1] - cpu_before[1])
        for w in workers:
            w.join()
    finally:
        proc.terminate()
        proc.wait(60)
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    row = con.execute("SELECT count(*) FROM spans").fetchone()
    stored = int(row[0]) if row else 0
    con.close()
    return elapsed, statuses, stored, cpu


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--spans-per-request", type=int, default=512)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument(
        "--paths",
        nargs="+",
        choices=["compiled", "pure"],
        default=["compiled", "pure"],
        help="decode paths to measure: the compiled one (if built) and the pure-Python reference",
    )
    args = parser.parse_args()
    from reach_collector.ingest import fast

    if "compiled" in args.paths and not fast.enabled():
        parser.error("the compiled decode path is not built here (or REACH_COLLECTOR_PURE_PYTHON is set)")
    bodies = make_bodies(args.requests, args.spans_per_request)
    from reach_collector.ingest.decode import PROTOBUF, parse

    spans = sum(
        len(ss.spans) for b in bodies for rs in parse(b, PROTOBUF).resource_spans for ss in rs.scope_spans
    )
    print(
        f"workload: {len(bodies)} requests, {spans} spans, {sum(map(len, bodies)) / spans:.0f} bytes/span, "
        f"{os.cpu_count()} CPUs"
    )
    with tempfile.TemporaryDirectory() as tmp:
        n, elapsed = raw_insert(bodies, Path(tmp) / "raw.duckdb")
        raw_rate = n / elapsed
        print(f"raw DuckDB Arrow insert (64k-row commits + checkpoint): {raw_rate:,.0f} spans/s")
        for path in args.paths:
            for clients in args.clients:
                elapsed, statuses, stored, (main_cpu, decoder_cpu) = collector_ingest(
                    bodies, spans, clients, Path(tmp) / f"{path}{clients}.duckdb", pure_python=path == "pure"
                )
                rate = spans / elapsed
                print(
                    f"collector durable ingest ({path} decode), {clients} client(s): {rate:,.0f} spans/s "
                    f"({rate / raw_rate:.2f}x raw insert); statuses {statuses}; stored {stored}/{spans}; "
                    f"CPU µs/span: collector process {main_cpu / spans * 1e6:.1f}, "
                    f"decoder processes {decoder_cpu / spans * 1e6:.1f}"
                )


if __name__ == "__main__":
    main()

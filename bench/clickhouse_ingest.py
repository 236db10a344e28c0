"""ClickHouse ingest benchmark: the collector on ``--db clickhouse://`` against clickhouse-driver's
own columnar insert of the same rows, side by side in one run, on a real clickhouse-server
(Debian's 18.16, started here on loopback in a temporary directory).

The same realistic multi-agent OTLP protobuf requests (bench/_spans.py; ``--heavy`` for the
heavier workload) are decoded once by the collector's decoder; then, in each round, in a shuffled
order, each into a fresh database of the same schema:

- ``driver``: clickhouse-driver's columnar ``INSERT`` of the span table's columns, converted
  beforehand (so only the driver and the server are timed), in 64k-row batches;
- ``store.write``: ``ClickHouseStore.write`` of the same Arrow batches, 64k rows each — the
  encoding from Arrow straight to the Native wire format (``native.span_block``) plus the same
  insert (the encoding alone is timed too, on the side, beside the conversion to the lists the
  driver takes, ``convert``, which it replaces);
- ``collector N``: a subprocess collector at its defaults, N client processes posting the
  requests (512 spans each), every one answered only after ClickHouse acknowledged it.

Prints spans/s per variant (median over rounds) and each one's ratio to ``driver`` in the same
round (§7: one collector ≥ 0.5× the driver's own insert of the same rows).

    python bench/clickhouse_ingest.py [--requests 200] [--rounds 3] [--clients 1 4] [--heavy]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from multiprocessing.queues import Queue

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent / "tests" / "clickhouse"))

from _spans import decoded_table, make_bodies  # noqa: E402
from ch_server import ensure_clickhouse_server, start_server  # noqa: E402
from ingest import _client, _free_port, collect_statuses  # noqa: E402
from peers.harness import wait_healthy  # noqa: E402

BATCH_ROWS = 65_536


def _driver(server: Any, database: str, columns: list[list[list[Any]]]) -> float:
    from reach_collector.store.clickhouse.schema import INSERT_COLUMNS
    from reach_collector.store.clickhouse.store import ClickHouseStore

    ClickHouseStore(server.url(database)).close()  # the schema
    client = server.client(database)
    sql = f"INSERT INTO spans ({', '.join(INSERT_COLUMNS)}) VALUES"
    started = time.perf_counter()
    for batch in columns:
        client.execute(sql, batch, columnar=True)
    elapsed = time.perf_counter() - started
    client.disconnect()
    return elapsed


def _store_write(server: Any, database: str, tables: list[Any]) -> float:
    from reach_collector.store.clickhouse.store import ClickHouseStore

    store = ClickHouseStore(server.url(database))
    started = time.perf_counter()
    for table in tables:
        store.write(table, None)  # no parts: ClickHouse's materialized view derives them
    elapsed = time.perf_counter() - started
    store.close()
    return elapsed


def _collector(server: Any, database: str, bodies: list[bytes], clients: int) -> tuple[float, dict[int, int]]:
    port = _free_port()
    command = [sys.executable, "-m", "reach_collector", "--db", server.url(database), "--port", str(port)]
    proc = subprocess.Popen(
        [*command, "--grpc-port", "0", "--retention", "0s"],
        stdout=subprocess.DEVNULL,
        env={k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_"))},
    )
    try:
        wait_healthy(port, proc, 30)
        ctx = mp.get_context("fork")
        barrier = ctx.Barrier(clients + 1)
        out: Queue[dict[int, int]] = ctx.Queue()
        progress = ctx.Array("i", clients)
        workers = [
            ctx.Process(target=_client, args=(port, bodies[i::clients], barrier, out, progress, i))
            for i in range(clients)
        ]
        for w in workers:
            w.start()
        barrier.wait()
        started = time.perf_counter()
        statuses = collect_statuses(out, len(workers))
        elapsed = time.perf_counter() - started
        for w in workers:
            w.join()
    finally:
        proc.terminate()
        proc.wait(60)
    return elapsed, statuses


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=200, help="requests of 512 spans per variant")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--heavy", action="store_true", help="the heavier 19-span-trace workload")
    args = parser.parse_args()

    from reach_collector.store.clickhouse.convert import insert_columns
    from reach_collector.store.clickhouse.native import span_block

    bodies = make_bodies(args.requests, 512, heavy=args.heavy)
    table = decoded_table(bodies)
    spans = table.num_rows
    tables = [table.slice(o, BATCH_ROWS) for o in range(0, spans, BATCH_ROWS)]
    started = time.perf_counter()
    columns = [insert_columns(t) for t in tables]
    convert_s = time.perf_counter() - started
    started = time.perf_counter()
    for t in tables:
        span_block(t)
    encode_s = time.perf_counter() - started

    binary = ensure_clickhouse_server()
    directory = Path(tempfile.mkdtemp(prefix="reach-bench-ch-"))
    server = start_server(binary, directory)
    (version,) = server.execute("SELECT version()")[0]
    variants = ["driver", "store.write", *(f"collector {n}" for n in args.clients)]
    results: dict[str, list[float]] = {v: [] for v in variants}
    ratios: dict[str, list[float]] = {v: [] for v in variants}
    rng = random.Random(5)
    try:
        for r in range(args.rounds):
            order = variants[:]
            rng.shuffle(order)
            seconds: dict[str, float] = {}
            for variant in order:
                database = f"bench_{r}_{variant.replace(' ', '_').replace('.', '_')}"
                if variant == "driver":
                    seconds[variant] = _driver(server, database, columns)
                elif variant == "store.write":
                    seconds[variant] = _store_write(server, database, tables)
                else:
                    elapsed, statuses = _collector(server, database, bodies, int(variant.split()[1]))
                    seconds[variant] = elapsed
                    if set(statuses) - {200}:
                        print(f"  round {r} {variant}: statuses {statuses}", flush=True)
                stored = int(server.execute(f"SELECT count() FROM {database}.spans")[0][0])
                if stored != spans:
                    raise SystemExit(f"{variant}: {stored} spans stored of {spans}")
                server.execute(f"DROP DATABASE {database}")
            for variant in variants:
                results[variant].append(spans / seconds[variant])
                ratios[variant].append(seconds["driver"] / seconds[variant])
            print(
                f"round {r}: " + ", ".join(f"{v} {spans / seconds[v]:,.0f}/s" for v in variants), flush=True
            )
    finally:
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)

    workload = "heavy" if args.heavy else "standard"
    print(
        f"\nClickHouse {version}, {workload} workload, {spans} spans per variant "
        f"({args.requests} requests × 512), {args.rounds} rounds; load average {os.getloadavg()}"
    )
    print(f"{'variant':<14} {'median spans/s':>15} {'× driver':>9}")
    for variant in variants:
        rate, ratio = statistics.median(results[variant]), statistics.median(ratios[variant])
        print(f"{variant:<14} {rate:>15,.0f} {ratio:>9.2f}")
    print(f"convert (Arrow → driver columns) alone: {spans / convert_s:,.0f} spans/s")
    print(f"encode (Arrow → Native block, what store.write sends) alone: {spans / encode_s:,.0f} spans/s")


if __name__ == "__main__":
    main()

"""ClickHouse at scale (SPEC §7, §16), on real Debian clickhouse-server 18.16 processes on loopback.

``ingest``: the same realistic multi-agent OTLP protobuf requests (bench/_spans.py, 512 spans
each) into a fresh database per variant, side by side in shuffled rounds:

- ``driver node`` / ``driver cluster``: clickhouse-driver's own columnar insert of the span
  table's columns (converted beforehand: only the driver and the servers are timed), 64k-row
  batches, into one node / through the ``Distributed`` table of a two-shard cluster
  (``insert_distributed_sync``: the rows are on their shards when it returns);
- ``1 collector node``, ``2 collectors node``, ``2 collectors cluster``: subprocess collectors at
  their defaults (``--db clickhouse://...``, ``?cluster=`` for the cluster), the same client
  processes shared between them, each request answered only after ClickHouse acknowledged it.

Prints spans/s per variant (median over rounds) and the §7 ratios, each from the same round: one
collector / driver node (≥ 0.5), two collectors / one (≥ 1.6), cluster / node (≥ 1.5, for the
driver and for two collectors).

``queries``: 10 M spans (the realistic generator's rows, new random trace ids and times spread
at 116 spans/s over a day up to the build) written with ``ClickHouseStore.write`` into a server
whose data directory is kept (``--data``, reused when it holds them), then ``GET /api/traces/{id}``
for random known ids and ``GET /api/metrics/golden?window=5m`` over real HTTP from the collector's
app on that store, its clock at the data's end (§7: p99 < 50 ms and < 100 ms).

    python bench/scale.py ingest [--requests 192] [--rounds 3] [--clients 16]
    python bench/scale.py queries [--spans 10000000] [--data DIR] [--runs 300]

``--data`` defaults to ``reach-scale-clickhouse`` in the temporary directory, kept between runs.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from multiprocessing.queues import Queue

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests"), str(HERE.parent / "tests" / "clickhouse")]

from _spans import decoded_table, make_bodies  # noqa: E402
from ch_server import (  # noqa: E402
    CLUSTER,
    ClickHouseServer,
    ensure_clickhouse_server,
    start_cluster,
    stop_all,
)
from ingest import _client, _free_port, collect_statuses  # noqa: E402
from metrics import time_runs  # noqa: E402
from peers.harness import wait_healthy  # noqa: E402

BATCH_ROWS = 65_536
S = 1_000_000_000
SPANS_PER_S = 116  # 10 M spans in a day


@dataclass
class Target:
    """One node, or the shards of a cluster (DDL and counts through the first)."""

    servers: list[ClickHouseServer]
    cluster: str | None = None

    def url(self, database: str, server: int = 0) -> str:
        url: str = self.servers[server % len(self.servers)].url(database, cluster=self.cluster)
        return url

    def count(self, database: str) -> int:
        return int(self.servers[0].execute(f"SELECT count() FROM {database}.spans")[0][0])

    def drop(self, database: str) -> None:
        for server in self.servers:
            server.execute(f"DROP DATABASE IF EXISTS {database}")


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def _proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _machine() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far."""
    values = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]
    return (sum(values) - idle) / os.sysconf("SC_CLK_TCK"), sum(values) / os.sysconf("SC_CLK_TCK")


class Meter:
    """Where the CPU went while a variant ran: its servers, the collectors (or the driver's own
    process), the client processes, and how busy the machine was (other jobs included)."""

    def __init__(self, servers: list[ClickHouseServer]) -> None:
        self.pids = [s.proc.pid for s in servers if s.proc is not None]
        self.cpu: dict[str, float] = {}

    def start(self) -> None:
        self._servers = sum(map(_proc_cpu, self.pids))
        self._self = sum(os.times()[:2])
        self._children = sum(os.times()[2:4])
        self._machine = _machine()

    def clients_done(self) -> None:
        self.cpu["clients"] = sum(os.times()[2:4]) - self._children

    def stop(self, collectors: list[int] | None = None) -> None:
        self.cpu["server"] = sum(map(_proc_cpu, self.pids)) - self._servers
        if collectors is None:
            self.cpu["driver"] = sum(os.times()[:2]) - self._self
        else:
            self.cpu["collector"] = sum(map(_proc_cpu, collectors)) - self._collectors
        busy, total = _machine()
        self.cpu["machine busy"] = (busy - self._machine[0]) / max(total - self._machine[1], 1e-9)

    def collectors_started(self, pids: list[int]) -> None:
        self._collectors = sum(map(_proc_cpu, pids))


# --- ingest ----------------------------------------------------------------------------------------
def _driver(target: Target, database: str, columns: list[list[list[Any]]], meter: Meter) -> float:
    from reach_collector.store.clickhouse.schema import INSERT_COLUMNS
    from reach_collector.store.clickhouse.store import ClickHouseStore

    ClickHouseStore(target.url(database)).close()  # the schema, on every shard
    client = target.servers[0].client(database)
    settings = {"insert_distributed_sync": 1} if target.cluster else None
    sql = f"INSERT INTO spans ({', '.join(INSERT_COLUMNS)}) VALUES"
    meter.start()
    started = time.perf_counter()
    for batch in columns:
        client.execute(sql, batch, columnar=True, settings=settings)
    elapsed = time.perf_counter() - started
    meter.stop()
    client.disconnect()
    return elapsed


def _collectors(
    target: Target, database: str, bodies: list[bytes], collectors: int, clients: int, meter: Meter
) -> float:
    """``collectors`` subprocess collectors on one database; ``clients`` processes share them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_"))}
    ports, procs = [], []
    try:
        for i in range(collectors):
            port = _free_port()
            command = [sys.executable, "-m", "reach_collector", "--db", target.url(database, i)]
            command += ["--port", str(port), "--grpc-port", "0", "--retention", "0s"]
            procs.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, env=env))
            ports.append(port)
            wait_healthy(port, procs[-1], 60)  # one at a time: the first creates the schema
        ctx = mp.get_context("fork")
        barrier = ctx.Barrier(clients + 1)
        out: Queue[dict[int, int]] = ctx.Queue()
        progress = ctx.Array("i", clients)
        workers = [
            ctx.Process(
                target=_client, args=(ports[i % collectors], bodies[i::clients], barrier, out, progress, i)
            )
            for i in range(clients)
        ]
        for w in workers:
            w.start()
        pids = [p.pid for p in procs]
        meter.start()
        meter.collectors_started(pids)
        barrier.wait()
        started = time.perf_counter()
        statuses = collect_statuses(out, len(workers))
        elapsed = time.perf_counter() - started
        meter.stop(pids)
        for w in workers:
            w.join()
        meter.clients_done()
        if set(statuses) - {200}:
            print(f"  {collectors} collector(s): statuses {statuses}", flush=True)
        return elapsed
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(60)


def run_ingest(args: argparse.Namespace) -> None:
    from reach_collector.store.clickhouse.convert import insert_columns

    bodies = make_bodies(args.requests, 512, heavy=args.heavy)
    table = decoded_table(bodies)
    spans = table.num_rows
    columns = [insert_columns(table.slice(o, BATCH_ROWS)) for o in range(0, spans, BATCH_ROWS)]

    binary = ensure_clickhouse_server()
    directory = Path(tempfile.mkdtemp(prefix="reach-scale-ingest-"))
    node_server = ClickHouseServer(binary, directory / "node").start()
    shards = start_cluster(binary, directory / "cluster", 2, CLUSTER)
    node, cluster = Target([node_server]), Target(shards, CLUSTER)
    variants: dict[str, Callable[[str, Meter], float]] = {
        "driver node": lambda db, m: _driver(node, db, columns, m),
        "1 collector node": lambda db, m: _collectors(node, db, bodies, 1, args.clients, m),
        "2 collectors node": lambda db, m: _collectors(node, db, bodies, 2, args.clients, m),
        "driver cluster": lambda db, m: _driver(cluster, db, columns, m),
        "2 collectors cluster": lambda db, m: _collectors(cluster, db, bodies, 2, args.clients, m),
    }
    rates: dict[str, list[float]] = {v: [] for v in variants}
    cpu: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    ratios: dict[str, list[float]] = {}
    rng = random.Random(7)
    before = _load()
    try:
        for r in range(args.rounds):
            order = list(variants)
            rng.shuffle(order)
            seconds: dict[str, float] = {}
            for variant in order:
                target = cluster if variant.endswith("cluster") else node
                database = f"scale_{r}_{variant.replace(' ', '_')}"
                meter = Meter(target.servers)
                seconds[variant] = variants[variant](database, meter)
                cpu[variant].append(meter.cpu)
                stored = target.count(database)
                if stored != spans:
                    raise SystemExit(f"{variant}: {stored} spans stored of {spans}")
                target.drop(database)
            rate = {v: spans / s for v, s in seconds.items()}
            for v in variants:
                rates[v].append(rate[v])
            pairs = {
                "1 collector / driver node": rate["1 collector node"] / rate["driver node"],
                "2 collectors / 1 collector": rate["2 collectors node"] / rate["1 collector node"],
                "cluster / node, driver": rate["driver cluster"] / rate["driver node"],
                "cluster / node, 2 collectors": rate["2 collectors cluster"] / rate["2 collectors node"],
            }
            for k, x in pairs.items():
                ratios.setdefault(k, []).append(x)
            print(f"round {r}: " + ", ".join(f"{v} {rate[v]:,.0f}/s" for v in variants), flush=True)
    finally:
        stop_all([node_server, *shards])
        shutil.rmtree(directory, ignore_errors=True)
    workload = "heavy" if args.heavy else "standard"
    print(
        f"\nClickHouse 18.16, {workload} workload, {spans} spans per variant ({args.requests} requests"
        f" × 512), {args.clients} client processes, {args.rounds} rounds; load average {before} → {_load()}"
    )
    print("CPU seconds per 100k spans: the ClickHouse server(s), the collector(s) or the driver's own")
    print("process, the client processes; and how busy the machine was meanwhile (other jobs too)")
    print(f"{'variant':<22} {'median spans/s':>15}   {'server':>6} {'coll.':>5} {'clients':>7}  busy")
    for v in variants:
        per = 100_000 / spans
        med = {
            k: statistics.median(c.get(k, 0.0) for c in cpu[v])
            for k in ("server", "collector", "driver", "clients", "machine busy")
        }
        own = med["collector"] or med["driver"]
        print(
            f"{v:<22} {statistics.median(rates[v]):>15,.0f}   {med['server'] * per:6.2f} {own * per:5.2f}"
            f" {med['clients'] * per:7.2f}  {med['machine busy']:4.0%}"
        )
    targets = {
        "1 collector / driver node": 0.5,
        "2 collectors / 1 collector": 1.6,
        "cluster / node, driver": 1.5,
        "cluster / node, 2 collectors": 1.5,
    }
    print(f"\n{'ratio (same round)':<30} {'median':>7} {'rounds':>20}  target")
    for k, goal in targets.items():
        xs = ratios[k]
        met = "met" if statistics.median(xs) >= goal else "NOT met"
        shown = " ".join(f"{x:.2f}" for x in xs)
        print(f"{k:<30} {statistics.median(xs):>7.2f} {shown:>20}  ≥ {goal} {met}")


# --- 10 M spans: build (kept) and queries ----------------------------------------------------------
def _template(seed: int) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """Decoded realistic requests; each row's trace index (in first-start order) and the time its
    trace starts."""
    table = decoded_table(make_bodies(64, 512, seed=seed))
    firsts = table.group_by("trace_id").aggregate([("start_ns", "min")]).sort_by("start_ns_min")
    order = pc.index_in(table.column("trace_id"), value_set=firsts.column("trace_id")).to_numpy()
    return table, order.astype(np.int64), firsts.column("start_ns_min").to_numpy()[order]


def _random_ids(rng: np.random.Generator, n: int) -> np.ndarray:
    words = rng.integers(0, 2**63, (n, 2), dtype=np.int64).astype(np.uint64)
    return np.char.add(np.char.mod("%016x", words[:, 0]), np.char.mod("%016x", words[:, 1])).astype(str)


def build(server: ClickHouseServer, database: str, n_spans: int) -> dict[str, Any]:
    """``n_spans`` rows through ``ClickHouseStore.write`` in 64k batches: the template's traces
    again and again, each time with new random trace ids, spread evenly in time up to now."""
    from reach_collector.store.clickhouse.store import ClickHouseStore

    template, trace_of_row, trace_start = _template(seed=11)
    n_traces = int(trace_of_row.max()) + 1
    rng = np.random.default_rng(11)
    per_trace_ns = int(len(template) / n_traces / SPANS_PER_S * S)
    repeats = -(-n_spans // len(template))
    t0 = time.time_ns() - repeats * n_traces * per_trace_ns
    store = ClickHouseStore(server.url(database))
    sample: list[str] = []
    last_end, written, pending = 0, 0, []
    started = time.perf_counter()
    for k in range(repeats):
        ids = _random_ids(rng, n_traces)
        first = t0 + (k * n_traces + trace_of_row) * per_trace_ns
        shift = pa.array(first - trace_start)
        rows = template.set_column(0, "trace_id", pa.array(ids[trace_of_row]))
        for name in ("start_ns", "end_ns"):
            i = rows.schema.get_field_index(name)
            rows = rows.set_column(i, name, pc.add(rows.column(name), shift))
        rows = rows.slice(0, min(len(rows), n_spans - written))
        written += len(rows)
        present = pc.unique(rows.column("trace_id")).to_numpy(zero_copy_only=False)
        sample.extend(rng.choice(present, min(8, len(present)), replace=False).tolist())
        last_end = max(last_end, int(pc.max(rows.column("end_ns")).as_py()))
        pending.append(rows)
        if sum(len(t) for t in pending) >= BATCH_ROWS or written >= n_spans:
            # No parts: ClickHouse's materialized view derives them from the spans.
            store.write(pa.concat_tables(pending).combine_chunks(), None)
            pending = []
        if k % 40 == 0:
            print(f"  {written:>11,} spans  {time.perf_counter() - started:6.1f}s", file=sys.stderr)
    store.close()
    return {
        "spans": written,
        "last_end_ns": last_end,
        "ids": sample,
        "build_s": time.perf_counter() - started,
    }


def _settle(server: ClickHouseServer, database: str, timeout_s: float) -> int:
    """Wait (up to ``timeout_s``) for background merges to finish; the active span parts."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not server.execute(f"SELECT count() FROM system.merges WHERE database = '{database}'")[0][0]:
            break
        time.sleep(2)
    q = f"SELECT count() FROM system.parts WHERE database = '{database}' AND table = 'spans' AND active"
    return int(server.execute(q)[0][0])


def run_queries(args: argparse.Namespace) -> None:
    import httpx
    from servers import ServerThread

    from reach_collector.app import create_app
    from reach_collector.config import Settings
    from reach_collector.query import metrics
    from reach_collector.store.clickhouse.schema import SCHEMA_VERSION
    from reach_collector.store.clickhouse.store import ClickHouseStore

    database = "scale"
    data = Path(args.data)
    meta_path = data / "scale-build.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else None
    server = ClickHouseServer(ensure_clickhouse_server(), data).start()
    try:
        stored = int(server.execute(f"SELECT count() FROM system.tables WHERE database = '{database}'")[0][0])
        if (
            meta is not None
            and meta["spans"] == args.spans
            and meta.get("schema") == SCHEMA_VERSION
            and stored
            and Target([server]).count(database) == args.spans
        ):
            print(f"reusing the {args.spans:,} spans in {data}", file=sys.stderr)
            meta["build_s"] = None
        else:
            Target([server]).drop(database)
            meta = {**build(server, database, args.spans), "schema": SCHEMA_VERSION}
            meta_path.write_text(json.dumps({k: v for k, v in meta.items() if k != "build_s"}))
        parts = _settle(server, database, args.settle_s)
        now_s = meta["last_end_ns"] / S + 1
        url = server.url(database)
        store = ClickHouseStore(url)
        settings = replace(Settings(db=url), retention_s=0)
        app = create_app(settings, store=store, clock=lambda: now_s, alert_loop=False)
        http = ServerThread(app).start()
        try:
            client = httpx.Client(base_url=http.url, timeout=30)
            ids = random.Random(3).sample(meta["ids"], min(len(meta["ids"]), args.runs))
            it = iter(ids * 2)

            def trace() -> None:
                r = client.get(f"/api/traces/{next(it)}")
                assert r.status_code == 200 and r.json()["span_count"] > 0, r.text[:200]

            def golden() -> None:
                r = client.get("/api/metrics/golden", params={"window": "5m"})
                assert r.status_code == 200 and r.json()["total"]["calls"] > 0, r.text[:200]

            window = client.get("/api/metrics/golden", params={"window": "5m"}).json()["total"]["calls"]
            results = {
                "GET /api/traces/{id}": time_runs(trace, len(ids) - 1),
                "GET /api/metrics/golden?window=5m": time_runs(golden, args.runs),
                "metrics.golden(5m) in process": time_runs(
                    lambda: metrics.golden(store, int(now_s * S), 300), args.runs
                ),
            }
            client.close()
        finally:
            http.stop()
            store.close()
    finally:
        server.stop()
    built = f"built in {meta['build_s']:.0f} s" if meta.get("build_s") else "reused"
    print(
        f"\nClickHouse 18.16, schema {meta['schema']}, {meta['spans']:,} spans ({built}; {parts} active"
        f" span parts), {window} calls in the 5-minute window, {args.runs} runs each; load average {_load()}"
    )
    print(f"{'query':<36} {'p50 ms':>8} {'p99 ms':>8}")
    for name, (p50, p99) in results.items():
        print(f"{name:<36} {p50:>8.1f} {p99:>8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    ingest = sub.add_parser("ingest", help="one node, two collectors, a two-shard cluster")
    ingest.add_argument("--requests", type=int, default=192, help="requests of 512 spans per variant")
    ingest.add_argument("--rounds", type=int, default=3)
    ingest.add_argument("--clients", type=int, default=16, help="client processes posting")
    ingest.add_argument("--heavy", action="store_true", help="the heavier 19-span-trace workload")
    queries = sub.add_parser("queries", help="trace by id and golden 5m at 10 M spans")
    queries.add_argument("--spans", type=int, default=10_000_000)
    queries.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "reach-scale-clickhouse"))
    queries.add_argument("--runs", type=int, default=300)
    queries.add_argument("--settle-s", type=float, default=300, help="wait this long at most for merges")
    args = parser.parse_args()
    (run_ingest if args.command == "ingest" else run_queries)(args)


if __name__ == "__main__":
    main()

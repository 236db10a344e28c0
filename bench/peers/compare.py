"""Our collector side by side with peer trace stores, fed the same multi-agent OTLP/HTTP protobuf.

Peers: ``python -m reach_collector`` (ours), a plain FastAPI + DuckDB receiver
(``plain_receiver.py``, the naïve way) and Arize Phoenix (installed on demand in its own
virtualenv under ``--venv-dir``). Each runs as a subprocess on 127.0.0.1 with a fresh store per
run; 1 and 4 client processes post the requests of ``bench/_spans.py``. Measured: durable spans/s
(first send → every span stored: the last 200 for ours and the plain receiver, which answer after
commit; for Phoenix, which answers before storing, until its GraphQL span count reaches all sent
spans) and trace-by-id latency p50/p99 over random stored traces via each one's HTTP API.

    python bench/peers/compare.py [--requests 300] [--phoenix-requests 20] [--clients 1 4]
        [--phoenix-clients 1 4] [--lookups 100] [--peers ours plain phoenix] [--venv-dir DIR]
        [--results bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import http.client
import importlib.metadata as md
import json
import multiprocessing as mp
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import peer_report as report  # noqa: E402
import phoenix_peer  # noqa: E402
from _spans import make_bodies  # noqa: E402

CT = {"content-type": "application/x-protobuf"}


@dataclass
class Peer:
    key: str
    label: str
    launch: Callable[[Path, int], subprocess.Popen[bytes]]
    trace_path: Callable[[str], str]
    spans_in: Callable[[Any], int]
    acked_is_durable: bool = True
    db_file: str = "store.duckdb"
    start_timeout_s: float = 60


@dataclass
class Run:
    clients: int
    sent: int
    elapsed_s: float | None  # None: not all spans stored within the timeout
    acked_s: float
    statuses: dict[int, int]
    stored: int
    lookup_ms: tuple[float, float] | None = None
    lookup_bad: int = 0
    notes: list[str] = field(default_factory=list)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _logged(cmd: list[str], workdir: Path) -> subprocess.Popen[bytes]:
    log = (workdir / "server.log").open("wb")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def ours(workdir: Path, port: int) -> subprocess.Popen[bytes]:
    db = str(workdir / "store.duckdb")
    cmd = [sys.executable, "-m", "reach_collector", "--db", db, "--port", str(port), "--grpc-port", "0"]
    return _logged(cmd, workdir)


def plain(workdir: Path, port: int) -> subprocess.Popen[bytes]:
    script = str(HERE / "plain_receiver.py")
    return _logged(
        [sys.executable, script, "--db", str(workdir / "store.duckdb"), "--port", str(port)], workdir
    )


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server's process group, SIGKILL it if it has not exited within 60 s."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    except ProcessLookupError:
        pass


def wait_healthy(port: int, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before answering /healthz")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"no healthy answer on port {port} within {timeout_s:.0f} s")
        time.sleep(0.1)


def _client(port: int, bodies: list[bytes], ready: Any, out: Any, deadline_s: float) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    statuses: Counter[int] = Counter()
    ready.wait()
    give_up = time.monotonic() + deadline_s
    for body in bodies:
        while True:
            conn.request("POST", "/v1/traces", body, CT)
            response = conn.getresponse()
            response.read()
            statuses[response.status] += 1
            if response.status in (429, 503) and time.monotonic() < give_up:
                time.sleep(min(float(response.getheader("retry-after") or 1) / 10, 1.0))
                continue
            break
    out.put(dict(statuses))


def send(
    port: int, bodies: list[bytes], clients: int, deadline_s: float
) -> tuple[float, float, dict[int, int]]:
    """(perf_counter at first send, seconds until every request was answered, status counts)."""
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(clients + 1)
    out = ctx.Queue()
    workers = [
        ctx.Process(target=_client, args=(port, bodies[i::clients], barrier, out, deadline_s))
        for i in range(clients)
    ]
    for w in workers:
        w.start()
    barrier.wait()
    started = time.perf_counter()
    statuses: Counter[int] = Counter()
    try:
        for _ in workers:
            statuses.update(out.get(timeout=deadline_s + 120))
    finally:
        acked = time.perf_counter() - started
        for w in workers:
            w.join(5)
            if w.is_alive():
                w.kill()
    return started, acked, dict(statuses)


def trace_ids(bodies: list[bytes]) -> Counter[str]:
    """Spans per trace id (hex) in the bodies."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    counts: Counter[str] = Counter()
    for body in bodies:
        req = ExportTraceServiceRequest()
        req.ParseFromString(body)
        for rs in req.resource_spans:
            for ss in rs.scope_spans:
                counts.update(span.trace_id.hex() for span in ss.spans)
    return counts


def lookups(peer: Peer, port: int, expected: Counter[str], n: int) -> tuple[tuple[float, float], int]:
    """p50/p99 ms of ``n`` trace-by-id lookups (after 10 warm-up ones) and how many came back wrong."""
    import numpy as np

    ids = random.Random(7).sample(sorted(expected), min(len(expected), n + 10))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    samples: list[float] = []
    bad = 0
    for i, tid in enumerate(ids):
        started = time.perf_counter()
        conn.request("GET", peer.trace_path(tid))
        response = conn.getresponse()
        body = response.read()
        ms = (time.perf_counter() - started) * 1000
        ok = response.status == 200 and peer.spans_in(json.loads(body)) == expected[tid]
        if i >= 10:
            samples.append(ms)
            bad += not ok
    return (float(np.percentile(samples, 50)), float(np.percentile(samples, 99))), bad


def db_count(path: Path) -> int:
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        row = con.execute("SELECT count(*) FROM spans").fetchone()
        return int(row[0]) if row else 0
    finally:
        con.close()


def run(peer: Peer, bodies: list[bytes], clients: int, n_lookups: int, timeout_s: float, tmp: Path) -> Run:
    expected = trace_ids(bodies)
    spans = sum(expected.values())
    workdir = Path(tempfile.mkdtemp(prefix=f"{peer.key}-c{clients}-", dir=tmp))
    port = free_port()
    proc = peer.launch(workdir, port)
    stored = 0
    try:
        wait_healthy(port, proc, peer.start_timeout_s)
        started, acked, statuses = send(port, bodies, clients, timeout_s)
        elapsed: float | None = acked
        if not peer.acked_is_durable:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            while (stored := phoenix_peer.stored(conn)) < spans:
                if time.perf_counter() - started > timeout_s:
                    elapsed = None
                    break
                time.sleep(0.2)
            else:
                elapsed = time.perf_counter() - started
        result = Run(clients, spans, elapsed, acked, statuses, stored)
        if n_lookups:
            result.lookup_ms, result.lookup_bad = lookups(peer, port, expected, n_lookups)
    finally:
        stop(proc)
    if peer.acked_is_durable:
        result.stored = db_count(workdir / peer.db_file)
    if result.elapsed_s is None:
        result.notes.append(f"only {result.stored:,} of {spans:,} spans stored after {timeout_s:.0f} s")
    return result


def source_state() -> str:
    """The commit the collector code comes from, flagged when its folder has uncommitted changes."""
    import reach_collector

    folder = Path(reach_collector.__file__).resolve().parent
    git = ["git", "-C", str(folder)]
    try:
        head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        dirty = subprocess.run([*git, "status", "--porcelain", "--", "."], capture_output=True, text=True)
    except OSError:
        return "unknown commit"
    if head.returncode != 0:
        return "unknown commit"
    return f"commit {head.stdout.strip()}" + (" + uncommitted changes" if dirty.stdout.strip() else "")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--phoenix-requests", type=int, default=20)
    parser.add_argument("--spans-per-request", type=int, default=512)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--phoenix-clients", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--lookups", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=300, help="Phoenix: seconds to wait for storage")
    parser.add_argument("--peers", nargs="+", default=["ours", "plain", "phoenix"])
    parser.add_argument("--phoenix-requirement", default="arize-phoenix")
    parser.add_argument("--venv-dir", type=Path, default=Path(tempfile.gettempdir()) / "reach-bench-venvs")
    parser.add_argument("--results", type=Path, default=None, help="update this RESULTS.md's section")
    args = parser.parse_args()
    command = " ".join(["python bench/peers/compare.py", *sys.argv[1:]])

    import duckdb

    versions = {
        "reach-otel": f"{md.version('reach-otel')} ({source_state()})",
        "duckdb": duckdb.__version__,
        "fastapi": md.version("fastapi"),
        "uvicorn": md.version("uvicorn"),
        "opentelemetry-proto": md.version("opentelemetry-proto"),
        "python": sys.version.split()[0],
    }
    peers: list[tuple[Peer, int, list[int]]] = []
    why_not: dict[str, str] = {}
    for key in args.peers:
        if key == "ours":
            peer = Peer(
                "ours",
                f"reach_collector {md.version('reach-otel')}",
                ours,
                lambda t: f"/api/traces/{t}",
                lambda p: len(p["spans"]),
            )
            peers.append((peer, args.requests, args.clients))
        elif key == "plain":
            peer = Peer(
                "plain",
                "plain FastAPI + DuckDB",
                plain,
                lambda t: f"/api/traces/{t}",
                lambda p: len(p["spans"]),
            )
            peers.append((peer, args.requests, args.clients))
        elif key == "phoenix":
            python, reason = phoenix_peer.ensure_venv(args.venv_dir / "phoenix", args.phoenix_requirement)
            if python is None:
                why_not["phoenix"] = reason
                print(f"Phoenix not measured: {reason}", file=sys.stderr)
                continue
            versions["arize-phoenix"] = phoenix_peer.version(python)

            def launch(workdir: Path, port: int, python: Path = python) -> subprocess.Popen[bytes]:
                return phoenix_peer.start(python, workdir, port, free_port())

            peer = Peer(
                "phoenix",
                f"Arize Phoenix {versions['arize-phoenix']}",
                launch,
                phoenix_peer.trace_path,
                phoenix_peer.spans_in,
                acked_is_durable=False,
                start_timeout_s=180,
            )
            peers.append((peer, args.phoenix_requests, args.phoenix_clients))
    results: dict[str, tuple[Peer, list[Run]]] = {}
    with tempfile.TemporaryDirectory(prefix="reach-peers-") as tmp:
        for peer, requests, client_counts in peers:
            bodies = make_bodies(requests, args.spans_per_request)
            runs = []
            for i, clients in enumerate(client_counts):
                last = i == len(client_counts) - 1
                print(f"{peer.label}: {requests} requests, {clients} client(s) ...", file=sys.stderr)
                try:
                    r = run(peer, bodies, clients, args.lookups if last else 0, args.timeout, Path(tmp))
                except Exception as exc:  # a peer that fails to start or serve is reported, not fatal
                    why_not[peer.key] = f"the {clients}-client run failed: {type(exc).__name__}: {exc}"
                    print(f"  {why_not[peer.key]}", file=sys.stderr)
                    break
                print(f"  {report.describe(r)}", file=sys.stderr)
                runs.append(r)
            results[peer.key] = (peer, runs)
    text = report.section(results, versions, why_not, command, args)
    print(text)
    if args.results:
        from metrics import write_results

        write_results(args.results, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Our collector side by side with peer trace stores, fed the same multi-agent OTLP/HTTP protobuf.

Peers: ``python -m reach_collector`` (ours); a plain FastAPI + DuckDB receiver
(``plain_receiver.py``, the naïve way) with an Arrow insert per request and again with
``executemany``; and Arize Phoenix (installed on demand in its own virtualenv under ``--venv-dir``).
Each runs as a subprocess on 127.0.0.1 with a fresh store per run; 1 and 4 client processes post
the requests of ``bench/_spans.py``. Measured: durable spans/s (first send → every span stored:
the last 200 for ours and the plain receiver, which answer after commit; for Phoenix, which
answers before storing, until its GraphQL span count reaches all sent spans) and trace-by-id
latency p50/p99 over random stored traces via each one's HTTP API.

    python bench/peers/compare.py [--requests 300] [--phoenix-requests 20]
        [--executemany-requests 20] [--clients 1 4] [--phoenix-clients 1 4] [--lookups 100]
        [--peers ours plain plain-executemany phoenix] [--venv-dir DIR] [--results bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import http.client
import importlib.metadata as md
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# bench/ on the path: its modules, and this folder as the package ``peers`` (as bench/ingest.py
# imports it), so every bench module has one name.
sys.path.insert(0, str(HERE.parent))

from _spans import make_bodies  # noqa: E402
from peers import harness, phoenix_peer  # noqa: E402
from peers import peer_report as report  # noqa: E402


@dataclass
class Peer:
    key: str
    label: str
    launch: Callable[[Path, int], subprocess.Popen[bytes]]
    trace_path: Callable[[str], str]
    spans_in: Callable[[Any], int]
    acked_is_durable: bool = True
    db_file: str = "store.duckdb"
    lookups: bool = True
    start_timeout_s: float = 60


def _api_peer(
    key: str, label: str, launch: Callable[[Path, int], subprocess.Popen[bytes]], lookups: bool = True
) -> Peer:
    """A peer with our trace API shape: ``GET /api/traces/{id}`` → ``{"spans": [...]}``."""
    return Peer(key, label, launch, lambda t: f"/api/traces/{t}", lambda p: len(p["spans"]), lookups=lookups)


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


def _logged(cmd: list[str], workdir: Path) -> subprocess.Popen[bytes]:
    with (workdir / "server.log").open("wb") as log:
        return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def ours(workdir: Path, port: int) -> subprocess.Popen[bytes]:
    db = str(workdir / "store.duckdb")
    cmd = [sys.executable, "-m", "reach_collector", "--db", db, "--port", str(port), "--grpc-port", "0"]
    return _logged(cmd, workdir)


def plain(workdir: Path, port: int, insert: str = "arrow") -> subprocess.Popen[bytes]:
    script = str(HERE / "plain_receiver.py")
    db = str(workdir / "store.duckdb")
    return _logged([sys.executable, script, "--db", db, "--port", str(port), "--insert", insert], workdir)


def run(peer: Peer, bodies: list[bytes], clients: int, n_lookups: int, timeout_s: float, tmp: Path) -> Run:
    expected = harness.trace_ids(bodies)
    spans = sum(expected.values())
    workdir = Path(tempfile.mkdtemp(prefix=f"{peer.key}-c{clients}-", dir=tmp))
    port = harness.free_port()
    proc = peer.launch(workdir, port)
    stored = 0
    try:
        harness.wait_healthy(port, proc, peer.start_timeout_s)
        started, acked, statuses = harness.send(port, bodies, clients, timeout_s)
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
            result.lookup_ms, result.lookup_bad = harness.lookups(
                peer.trace_path, peer.spans_in, port, expected, n_lookups
            )
    finally:
        harness.stop(proc)
    if peer.acked_is_durable:
        result.stored = harness.db_count(workdir / peer.db_file)
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
    parser.add_argument("--executemany-requests", type=int, default=20)
    parser.add_argument(
        "--peers",
        nargs="+",
        choices=["ours", "plain", "plain-executemany", "phoenix"],
        default=["ours", "plain", "plain-executemany", "phoenix"],
    )
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
            peer = _api_peer(key, f"reach_collector {md.version('reach-otel')}", ours)
            peers.append((peer, args.requests, args.clients))
        elif key == "plain":
            peers.append((_api_peer(key, "plain FastAPI + DuckDB", plain), args.requests, args.clients))
        elif key == "plain-executemany":
            peer = _api_peer(
                key, "plain, executemany", lambda w, p: plain(w, p, "executemany"), lookups=False
            )
            peers.append((peer, args.executemany_requests, args.clients))
        elif key == "phoenix":
            python, reason = phoenix_peer.ensure_venv(args.venv_dir / "phoenix", args.phoenix_requirement)
            if python is None:
                why_not["phoenix"] = reason
                print(f"Phoenix not measured: {reason}", file=sys.stderr)
                continue
            versions["arize-phoenix"] = phoenix_peer.version(python)

            def launch(workdir: Path, port: int, python: Path = python) -> subprocess.Popen[bytes]:
                return phoenix_peer.start(python, workdir, port, harness.free_port())

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
                    r = run(
                        peer,
                        bodies,
                        clients,
                        args.lookups if last and peer.lookups else 0,
                        args.timeout,
                        Path(tmp),
                    )
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

"""kill -9 the collector mid-stream, several times: every acknowledged span is there after restart."""

from __future__ import annotations

import itertools
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

SPANS_PER_REQUEST = 200


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(db: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "reach_collector", "--db", str(db), "--port", str(port), "--grpc-port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        assert proc.poll() is None, "collector exited during startup"
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("collector did not become healthy")


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _body(counter: itertools.count[int]) -> tuple[bytes, list[str]]:
    req = ExportTraceServiceRequest()
    scope = req.resource_spans.add().scope_spans.add()
    ids = []
    n = next(counter)
    trace_id = (n + 1).to_bytes(16, "big")
    for i in range(SPANS_PER_REQUEST):
        span = scope.spans.add()
        span.trace_id = trace_id
        span.span_id = (n * SPANS_PER_REQUEST + i + 1).to_bytes(8, "big")
        span.name = "durable"
        span.start_time_unix_nano = time.time_ns()
        span.end_time_unix_nano = span.start_time_unix_nano + 1000
        ids.append(span.span_id.hex())
    return req.SerializeToString(), ids


def test_sigkill_mid_stream_loses_nothing_acknowledged(tmp_path: Path) -> None:
    db = tmp_path / "durable.duckdb"
    acknowledged: set[str] = set()
    lock = threading.Lock()
    counter = itertools.count()
    rng = random.Random(7)
    orphans: list[int] = []
    for _ in range(4):
        proc, url = _start(db)
        stop = threading.Event()

        def send(url: str = url, stop: threading.Event = stop) -> None:
            with httpx.Client(timeout=5) as client:
                while not stop.is_set():
                    with lock:
                        body, ids = _body(counter)
                    try:
                        r = client.post(
                            url + "/v1/traces",
                            content=body,
                            headers={"content-type": "application/x-protobuf"},
                        )
                    except httpx.HTTPError:
                        return  # the collector died under us: this batch was never acknowledged
                    if r.status_code == 200:
                        with lock:
                            acknowledged.update(ids)

        threads = [threading.Thread(target=send) for _ in range(4)]
        for t in threads:
            t.start()
        time.sleep(rng.uniform(0.5, 1.5))
        workers = _children(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        orphans.extend(workers)
        stop.set()
        for t in threads:
            t.join(10)
    assert len(acknowledged) > 4 * SPANS_PER_REQUEST
    # The decoder processes of a killed collector leave with it (none stay behind as orphans).
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in orphans) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [pid for pid in orphans if _alive(pid)]
    # Restart once more (WAL replay), then stop it cleanly and read the file directly.
    proc, url = _start(db)
    assert httpx.get(url + "/api/traces", timeout=5).status_code == 200
    proc.send_signal(signal.SIGINT)
    proc.wait(20)
    con = duckdb.connect(str(db), read_only=True)
    stored = {row[0] for row in con.execute("SELECT span_id FROM spans").fetchall()}
    con.close()
    missing = acknowledged - stored
    assert not missing, f"{len(missing)} acknowledged spans lost"

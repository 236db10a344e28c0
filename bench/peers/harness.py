"""Server processes, client processes and trace lookups for ``bench/peers/compare.py``."""

from __future__ import annotations

import http.client
import json
import multiprocessing as mp
import os
import random
import signal
import socket
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

CT = {"content-type": "application/x-protobuf"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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


def lookups(
    trace_path: Callable[[str], str],
    spans_in: Callable[[Any], int],
    port: int,
    expected: Counter[str],
    n: int,
) -> tuple[tuple[float, float], int]:
    """p50/p99 ms of ``n`` trace-by-id lookups (after 10 warm-up ones) and how many came back wrong."""
    import numpy as np

    ids = random.Random(7).sample(sorted(expected), min(len(expected), n + 10))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    samples: list[float] = []
    bad = 0
    for i, tid in enumerate(ids):
        started = time.perf_counter()
        conn.request("GET", trace_path(tid))
        response = conn.getresponse()
        body = response.read()
        ms = (time.perf_counter() - started) * 1000
        ok = response.status == 200 and spans_in(json.loads(body)) == expected[tid]
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

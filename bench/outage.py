"""Does a slow or dead collector slow the app? Per-call latency, memory, spans not delivered and exit
time of an instrumented app with the collector up, down (connection refused), hung (accepts, never
answers) and answering 503; and a burst of 10 000 spans against a real collector, with reach_otel's
default queue and with the SDK's.

    python bench/outage.py [--batches 10] [--burst 10000]

Each case runs the same app in its own process (20 000 spans from 10 000 decorated calls, after a
warm-up); exit time runs from the app's last call to the end of its process (the bounded flush at
exit included). ``run_app``, ``run_burst`` and ``closed_port`` are also used by the tests in
tests/library/.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

# The atexit hook is registered before init(), so it runs after reach_otel's own flush at exit.
APP = textwrap.dedent(
    """
    import atexit, json, resource, statistics, sys, time
    import reach_otel

    atexit.register(lambda: print(json.dumps({"dropped": reach_otel.dropped_spans()}), flush=True))
    reach_otel.init(service_name="outage-app", endpoint=sys.argv[1], shutdown_timeout=float(sys.argv[3]))

    @reach_otel.tool(name="lookup")
    def lookup(i):
        return i + 1

    @reach_otel.agent(name="Billing")
    def billing(i):
        return lookup(i)

    errors = 0
    def batch(n):
        global errors
        start = time.perf_counter()
        for i in range(n):
            try:
                assert billing(i) == i + 1
            except Exception:
                errors += 1
        return (time.perf_counter() - start) / n * 1e6

    batch(1000)  # warm-up
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    per_call = [batch(1000) for _ in range(int(sys.argv[2]))]
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({
        "median_us": statistics.median(per_call),
        "errors": errors,
        "spans": 2 * 1000 * (int(sys.argv[2]) + 1),
        "rss_growth_kb": rss_after - rss_before,
        "done_at": time.time(),
    }), flush=True)
    """
)

# 1 000 turns of 10 spans each (workflow, agent, 8 tool calls), as fast as the app can make them.
BURST = textwrap.dedent(
    """
    import atexit, json, sys, time
    import reach_otel

    atexit.register(lambda: print(json.dumps({"dropped": reach_otel.dropped_spans()}), flush=True))
    reach_otel.init(service_name="burst-app", endpoint=sys.argv[1])

    @reach_otel.tool(name="lookup")
    def lookup(i):
        return i

    @reach_otel.agent(name="Billing")
    def billing(i):
        return sum(lookup(i) for _ in range(8))

    @reach_otel.workflow(name="turn")
    def turn(i):
        return billing(i)

    start = time.perf_counter()
    for i in range(int(sys.argv[2]) // 10):
        turn(i)
    print(json.dumps({"burst_s": time.perf_counter() - start, "done_at": time.time()}), flush=True)
    """
)


def _clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_OTEL_"))}
    env.update(extra or {})
    return env


def _run(code: str, *args: str, env: dict[str, str] | None = None, timeout: float = 120) -> dict[str, Any]:
    """Run an app; merge the JSON lines it prints; add ``exit_s`` and its stderr lines."""
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=_clean_env(env),
        timeout=timeout,
    )
    ended = time.time()
    assert out.returncode == 0, out.stderr[-3000:]
    result: dict[str, Any] = {}
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            result.update(json.loads(line))
    result["exit_s"] = ended - result.pop("done_at")
    result["stderr"] = [line for line in out.stderr.splitlines() if line.strip()]
    return result


def run_app(
    endpoint: str, batches: int = 10, shutdown_timeout: float = 5.0, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """The app's figures: median_us, errors, spans, dropped, rss_growth_kb, exit_s, stderr."""
    return _run(APP, endpoint, str(batches), str(shutdown_timeout), env=env)


def run_burst(endpoint: str, spans: int = 10_000, env: dict[str, str] | None = None) -> dict[str, Any]:
    """A burst of ``spans`` spans: burst_s, dropped, exit_s, stderr."""
    return _run(BURST, endpoint, str(spans), env=env)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def spans_stored(url: str) -> int:
    """The collector's own count of spans committed to its store (its /metrics)."""
    import httpx

    text = httpx.get(url + "/metrics", timeout=10).text
    found = re.search(r"^reach_collector_spans_stored(?:_total)? ([0-9.e+]+)$", text, re.MULTILINE)
    return int(float(found.group(1))) if found else -1


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from collector_process import CollectorProcess
    from otlp_sink import OtlpSink

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--burst", type=int, default=10_000)
    args = parser.parse_args()
    rows = []
    with OtlpSink() as up:
        rows.append(("collector up", run_app(up.url, args.batches)))
    rows.append(("collector down", run_app(f"http://127.0.0.1:{closed_port()}", args.batches)))
    for mode, label in (("hang", "collector hung"), ("unavailable", "collector answers 503")):
        with OtlpSink(mode=mode) as sink:
            rows.append((label, run_app(sink.url, args.batches)))
    base = rows[0][1]["median_us"]
    print("shutdown timeout 5 s (the default); spans per case:", rows[0][1]["spans"])
    print(
        f"{'case':<24} {'µs/call':>8} {'× up':>5} {'not delivered':>14} {'RSS growth MB':>14} "
        f"{'exit s':>7} {'stderr lines':>13} {'errors':>7}"
    )
    for label, r in rows:
        print(
            f"{label:<24} {r['median_us']:>8.1f} {r['median_us'] / base:>5.2f} {r['dropped']:>14} "
            f"{r['rss_growth_kb'] / 1024:>14.1f} {r['exit_s']:>7.2f} {len(r['stderr']):>13} {r['errors']:>7}"
        )
    for label, r in rows:
        for line in r["stderr"]:
            print(f"  {label} stderr: {line}")
    print(f"\nburst of {args.burst} spans against a real collector (reach_collector, a fresh DuckDB file)")
    print(f"{'queue':<28} {'made in s':>9} {'stored':>7} {'lost':>6} {'dropped_spans()':>16} {'exit s':>7}")
    for label, env in (
        ("reach_otel default (16 384)", None),
        ("SDK default (2 048)", {"OTEL_BSP_MAX_QUEUE_SIZE": "2048"}),
    ):
        with tempfile.TemporaryDirectory() as tmp, CollectorProcess(Path(tmp) / "burst.duckdb") as collector:
            burst = run_burst(collector.url, args.burst, env=env)
            time.sleep(0.5)  # acknowledged spans are committed; the counter is read from /metrics
            stored = spans_stored(collector.url)
        print(
            f"{label:<28} {burst['burst_s']:>9.2f} {stored:>7} {args.burst - stored:>6} "
            f"{burst['dropped']:>16} {burst['exit_s']:>7.2f}"
        )


if __name__ == "__main__":
    main()

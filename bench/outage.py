"""Does a slow or dead collector slow the app? Per-call latency of an instrumented app with the
collector up, down (connection refused), hung (accepts, never answers) and answering 503.

    python bench/outage.py [--batches 10]

Each case runs the same app in its own process (20 000 spans from 10 000 decorated calls);
``run_app`` and ``closed_port`` are also used by tests/library/test_collector_outage.py.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

APP = textwrap.dedent(
    """
    import json, resource, statistics, sys, time
    import reach_otel

    reach_otel.init(service_name="outage-app", endpoint=sys.argv[1], shutdown_timeout=1)

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
        "dropped": reach_otel.dropped_spans(),
        "rss_growth_kb": rss_after - rss_before,
    }), flush=True)
    """
)


def run_app(endpoint: str, batches: int = 10) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_OTEL_"))}
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-c", APP, endpoint, str(batches)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["wall_s"] = time.monotonic() - started
    return result


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from otlp_sink import OtlpSink

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=10)
    args = parser.parse_args()
    rows = []
    with OtlpSink() as up:
        rows.append(("collector up", run_app(up.url, args.batches)))
    rows.append(("collector down", run_app(f"http://127.0.0.1:{closed_port()}", args.batches)))
    for mode, label in (("hang", "collector hung"), ("unavailable", "collector answers 503")):
        with OtlpSink(mode=mode) as sink:
            rows.append((label, run_app(sink.url, args.batches)))
    base = rows[0][1]["median_us"]
    print(f"{'case':<24} {'µs/call':>9} {'× up':>6} {'dropped':>8} {'RSS growth MB':>14} {'errors':>7}")
    for label, r in rows:
        print(
            f"{label:<24} {r['median_us']:>9.1f} {r['median_us'] / base:>6.2f} {r['dropped']:>8} "
            f"{r['rss_growth_kb'] / 1024:>14.1f} {r['errors']:>7}"
        )


if __name__ == "__main__":
    main()

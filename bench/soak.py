"""Soak: steady multi-agent traffic against one collector, with alert evaluation and retention on.

Records the collector's resident memory over time, checks its log for errors and counts the
spans stored against the spans sent. Bounded: ``--minutes`` (default 5, at most 10).

    python bench/soak.py [--minutes 5] [--rate 400] [--results bench/RESULTS.md]

``run_soak()`` is also what the slow test in tests/collector/test_soak.py calls, for a minute.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path
from typing import Any

CONFIG = textwrap.dedent(
    """
    storage: {retention: 2m}
    alerting:
      interval: 1s
      rules:
        ReachSuccessRateLow: {for: 10s, window: 30s}
        ReachP99LatencyHigh: {for: 10s, window: 30s}
    """
)

# The traffic: a workflow with agents, a handoff, LLM and tool spans (7 spans a request).
APP = textwrap.dedent(
    """
    import random, sys, time
    import reach_otel
    reach_otel.init(service_name="soak-app", endpoint=sys.argv[1])
    rate, seconds = float(sys.argv[2]), float(sys.argv[3])

    @reach_otel.llm(model="soak-model", provider="local")
    def ask(q):
        return {"model": "soak-model", "usage": {"prompt_tokens": 12, "completion_tokens": 8}}

    @reach_otel.tool
    def lookup(q):
        if random.random() < 0.05:
            raise KeyError(q)
        return q

    @reach_otel.agent(name="BillingAgent")
    def billing(q):
        ask(q)
        return lookup(q)

    @reach_otel.agent(name="TriageAgent")
    def triage(q):
        ask(q)
        with reach_otel.handoff("TriageAgent", "BillingAgent") as h:
            h.transition("accept"); h.transition("start")
            out = billing(q)
            h.transition("commit")
        return out

    @reach_otel.workflow(name="soak_turn")
    def turn(q):
        return triage(q)

    sent = 0
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        for _ in range(int(rate / 10)):
            try:
                turn("q")
            except KeyError:
                pass
            sent += 1
        time.sleep(0.1)
    reach_otel.flush(timeout=30)
    print(sent * 7, reach_otel.dropped_spans(), flush=True)
    """
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rss_mb(pid: int) -> float:
    total = 0.0
    pids = [pid]
    try:  # the collector and its decoder worker processes
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(c) for c in children]
    except OSError:
        pass
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
        except OSError:
            continue
    return total


def _ingest_counters(url: str) -> tuple[int, int]:
    """Spans the collector received and rejected, from its own /metrics (retention deletes old rows)."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url + "/metrics", timeout=10) as response:
        text = response.read().decode()
    values = {
        sample.name: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }
    return int(values.get("reach_collector_spans_received_total", 0)), int(
        values.get("reach_collector_spans_rejected_total", 0)
    )


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def run_soak(minutes: float, rate: float, workdir: Path) -> dict[str, Any]:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    config = workdir / "soak.yaml"
    config.write_text(CONFIG)
    log = (workdir / "collector.log").open("w")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_"))}
    cmd = [sys.executable, "-m", "reach_collector", "--port", str(port), "--grpc-port", "0"]
    cmd += ["--db", str(workdir / "soak.duckdb"), "--config", str(config)]
    collector = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    curve: list[tuple[float, float]] = []
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                _get(url + "/healthz")
                break
            except OSError:
                if time.monotonic() > deadline or collector.poll() is not None:
                    raise RuntimeError("collector did not start") from None
                time.sleep(0.1)
        seconds = minutes * 60
        app = subprocess.Popen(
            [sys.executable, "-c", APP, url, str(rate), str(seconds)],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        started = time.monotonic()
        while app.poll() is None:
            curve.append((round(time.monotonic() - started, 1), round(_rss_mb(collector.pid), 1)))
            time.sleep(max(1.0, seconds / 60))
        sent_spans, dropped = (int(x) for x in (app.stdout.read() if app.stdout else "0 0").split())
        time.sleep(2)
        received, rejected = _ingest_counters(url)
    finally:
        collector.terminate()
        collector.wait(timeout=30)
        log.close()
    text = (workdir / "collector.log").read_text()
    warm = [rss for t, rss in curve if t >= seconds * 0.3] or [rss for _, rss in curve]
    return {
        "minutes": minutes,
        "sent_spans": sent_spans,
        "dropped_by_app": dropped,
        "received_spans": received,
        "rejected_spans": rejected,
        "rss_curve_mb": curve,
        "rss_after_warmup_min_max_mb": (min(warm), max(warm)),
        "rss_median_mb": statistics.median(r for _, r in curve),
        "log_errors": [line for line in text.splitlines() if "ERROR" in line or "Traceback" in line],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--rate", type=float, default=400, help="requests per second (7 spans each)")
    args = parser.parse_args()
    minutes = min(args.minutes, 10.0)
    with tempfile.TemporaryDirectory() as tmp:
        report = run_soak(minutes, args.rate, Path(tmp))
    print(json.dumps({k: v for k, v in report.items() if k != "rss_curve_mb"}, indent=2))
    print("rss curve (s, MB):", report["rss_curve_mb"])


if __name__ == "__main__":
    main()

"""Soak: steady multi-agent traffic against one collector, with alert evaluation and retention on.

Samples resident memory every 5 s — the collector process and its decoder worker processes
apart, and DuckDB's own share from the collector's /metrics — checks the collector's log for
errors and counts the spans stored against the spans sent. Bounded: ``--minutes`` (at most 10).
Flatness is judged after a warm-up (the retention window plus a minute): the per-minute floor
and median of the total, and the least-squares slope of the floors.

    python bench/soak.py [--minutes 5] [--rate 300] [--results bench/RESULTS.md]

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
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

RETENTION_S = 120
CONFIG = textwrap.dedent(
    """
    storage: {retention: 2m%s}
    alerting:
      interval: 1s
      rules:
        ReachSuccessRateLow: {for: 10s, window: 30s}
        ReachP99LatencyHigh: {for: 10s, window: 30s}
    """
)
SAMPLE_S: Final = 5.0
FLAT_SLOPE_MB_PER_MIN: Final = 2.0  # floors may drift this much per minute and still be flat
FLAT_BAND: Final = 0.10  # per-minute medians within 10 % of their mean

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
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def child_pids(pid: int) -> list[int]:
    """Child processes started by any thread of ``pid`` (decoder workers, their resource tracker)."""
    out: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            out += [int(c) for c in (task / "children").read_text().split()]
    except OSError:
        pass
    return out


def _scrape(url: str) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url + "/metrics", timeout=10) as response:
        text = response.read().decode()
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _sample(pid: int, url: str, t: float) -> dict[str, float]:
    collector = _rss_mb(pid)
    workers = sum(_rss_mb(c) for c in child_pids(pid))
    try:
        duckdb_mb = _scrape(url).get("reach_collector_duckdb_memory_bytes", -1.0) / 2**20
    except OSError:
        duckdb_mb = -1.0
    return {
        "t": round(t, 1),
        "total": round(collector + workers, 1),
        "collector": round(collector, 1),
        "workers": round(workers, 1),
        "duckdb": round(duckdb_mb, 1),
    }


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def flatness(curve: Sequence[dict[str, float]], warmup_s: float) -> dict[str, Any]:
    """Per-minute floor and median of the total after warm-up, the slope of the floors (MB/min,
    least squares) and the verdict."""
    minutes: dict[int, list[float]] = {}
    for s in curve:
        if s["t"] >= warmup_s:
            minutes.setdefault(int(s["t"] // 60), []).append(s["total"])
    full = {m: v for m, v in minutes.items() if len(v) >= 6}  # whole minutes only (≥ 30 s of samples)
    floors = [(m, min(v)) for m, v in sorted(full.items())]
    medians = [(m, statistics.median(v)) for m, v in sorted(full.items())]
    slope: float | None = None
    if len(floors) >= 2:
        fit = statistics.linear_regression([float(m) for m, _ in floors], [f for _, f in floors])
        slope = fit.slope
    band: float | None = None
    if medians:
        values = [v for _, v in medians]
        band = (max(values) - min(values)) / statistics.fmean(values)
    flat = (
        slope is not None
        and band is not None
        and len(floors) >= 3
        and abs(slope) <= FLAT_SLOPE_MB_PER_MIN
        and band <= FLAT_BAND
    )
    return {
        "warmup_s": warmup_s,
        "minute_floor_mb": floors,
        "minute_median_mb": [(m, round(v, 1)) for m, v in medians],
        "floor_slope_mb_per_min": None if slope is None else round(slope, 2),
        "median_band": None if band is None else round(band, 3),
        "flat": flat,
    }


def run_soak(
    minutes: float,
    rate: float,
    workdir: Path,
    *,
    memory_limit: str | None = None,
    threads: int | None = None,
) -> dict[str, Any]:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    config = workdir / "soak.yaml"
    extra = (f", memory_limit: {memory_limit}" if memory_limit else "") + (
        f", threads: {threads}" if threads else ""
    )
    config.write_text(CONFIG % extra)
    log = (workdir / "collector.log").open("w")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_"))}
    cmd = [sys.executable, "-m", "reach_collector", "--port", str(port), "--grpc-port", "0"]
    cmd += ["--db", str(workdir / "soak.duckdb"), "--config", str(config)]
    collector = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    curve: list[dict[str, float]] = []
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
            curve.append(_sample(collector.pid, url, time.monotonic() - started))
            next_at = started + len(curve) * SAMPLE_S
            while app.poll() is None and time.monotonic() < next_at:
                time.sleep(0.2)
        sent_spans, dropped = (int(x) for x in (app.stdout.read() if app.stdout else "0 0").split())
        time.sleep(2)
        counters = _scrape(url)
    finally:
        collector.terminate()
        collector.wait(timeout=30)
        log.close()
    text = (workdir / "collector.log").read_text()
    warmup_s = min(RETENTION_S + 60.0, seconds * 0.3)
    warm = [s["total"] for s in curve if s["t"] >= warmup_s] or [s["total"] for s in curve]
    return {
        "minutes": minutes,
        "rate": rate,
        "memory_limit": memory_limit or "(collector default)",
        "sent_spans": sent_spans,
        "dropped_by_app": dropped,
        "received_spans": int(counters.get("reach_collector_spans_received_total", 0)),
        "rejected_spans": int(counters.get("reach_collector_spans_rejected_total", 0)),
        "stored_spans": int(counters.get("reach_collector_spans_stored_total", -1)),
        "rss_curve": curve,
        "rss_after_warmup_min_max_mb": (min(warm), max(warm)),
        "rss_median_mb": statistics.median(s["total"] for s in curve),
        "flatness": flatness(curve, warmup_s),
        "log_errors": [line for line in text.splitlines() if "ERROR" in line or "Traceback" in line],
    }


def _fmt(n: int) -> str:
    return f"{n:,}".replace(",", "\u202f")


def _para(text: str) -> str:
    return textwrap.fill(" ".join(text.split()), width=100, break_on_hyphens=False)


def section(report: dict[str, Any], command: str) -> str:
    """The "## Soak" section of RESULTS.md: counts, the whole curve, the flatness figures."""
    from reach_collector.config import DEFAULT_MEMORY_LIMIT

    flat = report["flatness"]
    rows = [
        f"{s['t']:6.0f} {s['total']:7.1f} {s['collector']:9.1f} {s['workers']:7.1f} {s['duckdb']:7.1f}"
        for s in report["rss_curve"]
    ]
    floors = " ".join(f"{v:.0f}" for _, v in flat["minute_floor_mb"]) or "(none)"
    medians = " ".join(f"{v:.0f}" for _, v in flat["minute_median_mb"]) or "(none)"
    first = flat["minute_floor_mb"][0][0] if flat["minute_floor_mb"] else 0
    limit = report["memory_limit"].replace("(collector default)", f"{DEFAULT_MEMORY_LIMIT} (the default)")
    stored = report["stored_spans"]
    every = report["sent_spans"] == report["received_spans"] == stored and not report["rejected_spans"]
    setup = f"""Command: `{command}` — a collector child process (default settings but
        `storage.retention: 2m` and alert evaluation every second; store memory limit {limit}) and an
        app sending {report["rate"]:g} requests/s of 7 spans each (workflow, two agents, a handoff,
        two LLM calls, a tool) for {report["minutes"]:g} minutes. Resident memory sampled every
        {SAMPLE_S:g} s: the collector process, its decoder worker processes, and DuckDB's own share of
        the collector's (`reach_collector_duckdb_memory_bytes`)."""
    spans = f"""Spans: the app sent {_fmt(report["sent_spans"])} (its export queue dropped
        {report["dropped_by_app"]}); the collector received {_fmt(report["received_spans"])},
        rejected {report["rejected_spans"]} and stored (committed) {_fmt(stored)} —
        {"every span stored" if every else "**not every span stored**"};
        {len(report["log_errors"])} errors in its log."""
    verdict = f"""After the {flat["warmup_s"]:g} s warm-up (the 2-minute retention window fills,
        plus a minute), per minute from minute {first}: total RSS floor {floors} MB, median
        {medians} MB; least-squares slope of the floors {flat["floor_slope_mb_per_min"]} MB/min;
        the medians spread over {flat["median_band"]:.1%} of their mean.
        {"**Flat: met**" if flat["flat"] else "**Flat: not met**"} (the bar: the floors drift at
        most {FLAT_SLOPE_MB_PER_MIN:g} MB/min and the medians spread at most {FLAT_BAND:.0%}, over at
        least 3 minutes after warm-up)."""
    table = "```\n     t   total collector workers  duckdb   (s, MB)\n" + "\n".join(rows) + "\n```"
    parts = ["## Soak", *(_para(t) for t in (setup, spans, verdict)), table, NOTES.strip()]
    return "\n\n".join(parts) + "\n\n"


NOTES = textwrap.dedent(
    """\
    What grew, measured per process (2026-11-30, the same traffic): the decoder workers stay flat
    (≈ 180 MB for two). DuckDB's share is a saw-tooth — the rows since the last checkpoint stay in
    its memory (≈ 35 → 90 MB), and each checkpoint frees them — whose floor rose with the data kept
    (15 → 57 MB over 4 minutes): the retention pass ran every 10 minutes whatever the window, so a
    2-minute window let the tables grow for the whole run. Retention now runs every quarter of its
    window (10 s to 10 minutes) and the floor levels off at ≈ 30–40 MB once the window is full. The
    rest of the collector process (Python, Arrow, the allocator) levels off at ≈ 200–215 MB after
    two minutes. The short peaks (+100–190 MB for one sample) come at checkpoints and are given
    back at once. The store's memory is also capped now (`storage.memory_limit`, default 512MB,
    where DuckDB's own default is 80 % of RAM); in this run DuckDB stays far below it — the cap is
    for long-lived stores read over days of data, whose page cache would otherwise keep growing.
    `tests/collector/test_soak.py` runs a one-minute version in the suite (every span stored, no
    error, DuckDB under its limit, the RSS band after warm-up under 200 MB).
    """
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--rate", type=float, default=300, help="requests per second (7 spans each)")
    parser.add_argument(
        "--memory-limit", default=None, help="storage.memory_limit (default: the collector's)"
    )
    parser.add_argument("--threads", type=int, default=None, help="storage.threads")
    parser.add_argument("--results", default=None, help="replace this RESULTS.md's soak section")
    args = parser.parse_args()
    minutes = min(args.minutes, 10.0)
    with tempfile.TemporaryDirectory() as tmp:
        report = run_soak(minutes, args.rate, Path(tmp), memory_limit=args.memory_limit, threads=args.threads)
    print(json.dumps({k: v for k, v in report.items() if k != "rss_curve"}, indent=2))
    for s in report["rss_curve"]:
        print(json.dumps(s))
    if args.results:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from metrics import write_results  # the sibling benchmark's section writer

        command = "python bench/soak.py " + " ".join(sys.argv[1:])
        write_results(Path(args.results), section(report, command.strip()))


if __name__ == "__main__":
    main()

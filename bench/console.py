"""Web console benchmark and screenshots (SPEC §14): time to a usable trace view for 1 000 and
10 000 spans, the trace JSON fetch (as the console asks for it, ``tree=false``, and the default
response with the nested ``roots``), and a screenshot of every page.

A collector runs in this process on a loopback port with the demo's configuration; the demo's
support desk (``reach_collector.demo``: real openai client, fake LLM, content capture on) sends traffic
for ``--duration`` seconds so alerts fire and the on-call schedule has pages; then two crafted
multi-agent traces of 1 000 and 10 000 spans are posted as OTLP/JSON. A headless Chromium (Debian's
``chromium``, driven over the DevTools protocol) opens each trace ``--rounds`` times.

"Usable" is: the trace page has fetched the JSON, built its rows and drawn the timeline, the agent
graph and the first span's details, and a jump to the middle of the timeline shows its rows on the
next frames. Times are from the navigation's start, in the page's own clock.

    python bench/console.py --screenshots shots/ [--duration 20] [--rounds 5] [--doc PNG]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "console"))

from cdp import Browser, Page  # noqa: E402
from traffic import agent_trace, post  # noqa: E402

USABLE_JS = """(async () => {
  const b = document.querySelector('.wf-body');
  const frame = () => new Promise(r => requestAnimationFrame(() => r()));
  b.scrollTop = (b.scrollHeight - b.clientHeight) / 2;
  b.dispatchEvent(new Event('scroll'));
  await frame(); await frame();
  const y = Math.floor(b.scrollTop / 26) * 26;
  const drawn = !!document.querySelector(`.wf-row:not([hidden])[style*="translateY(${y}px)"]`);
  const mark = (n) => performance.getEntriesByName(n)[0]?.startTime ?? null;
  return {drawn, usable: performance.now(), start: mark('trace-start'), fetched: mark('trace-fetched'),
          built: mark('trace-drawn'), rows: document.querySelectorAll('.wf-row').length};
})()"""

SCROLL_JS = """(async () => {
  const b = document.querySelector('.wf-body');
  const frame = () => new Promise(r => requestAnimationFrame(() => r()));
  const times = [];
  for (let i = 0; i <= 60; i++) {
    const t = performance.now();
    b.scrollTop = (b.scrollHeight - b.clientHeight) * ((i * 37) % 61) / 60;
    b.dispatchEvent(new Event('scroll'));
    await frame();
    times.push(performance.now() - t);
  }
  times.sort((x, y) => x - y);
  return {p50: times[30], max: times[times.length - 1]};
})()"""


def run_demo_traffic(url: str, llm_url: str, duration: float) -> None:
    """The demo's support desk for ``duration`` seconds, with heartbeats (one stops: P2)."""
    from openai import AsyncOpenAI

    import reach_otel
    from reach_collector.demo.run import AGENTS, LOST_AGENT
    from reach_collector.demo.support import SupportDesk
    from reach_collector.demo.traffic import drive

    reach_otel.init(service_name="support-desk", endpoint=url, capture_content=True, instrument=False)
    reach_otel.instrument("openai")
    desk = SupportDesk(AsyncOpenAI(base_url=llm_url, api_key="demo", max_retries=0))
    beats = {agent: reach_otel.heartbeat(agent, every=1.0) for agent in AGENTS}

    def progress(done: float, _: Any) -> None:
        beat = beats.get(LOST_AGENT)
        if beat is not None and done >= 0.3 and beat.running:
            beat.stop(deregister=False)  # as a crash: its heartbeat just stops (P2)

    asyncio.run(drive(desk, duration, progress=progress))
    for beat in beats.values():
        if beat is not None:
            beat.stop()
    reach_otel.flush(timeout=10)


def start_collector(tmp: Path, pager: Any, name: str, extra: str = "") -> Any:
    """The demo's collector process (``python -m reach_collector``) with the demo's config."""
    from reach_collector.demo.run import Collector, demo_config

    config = tmp / f"{name}.yaml"
    config.write_text(demo_config(pager, datetime.now(timezone.utc)) + extra)
    collector = Collector(tmp / f"{name}.duckdb", _free_port(), config)
    collector.wait_healthy()
    return collector


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(page: Page, url: str, timeout: float = 120) -> float:
    started = time.perf_counter()
    page.goto(url, timeout=timeout)
    page.wait_for("document.body.dataset.ready === location.pathname", timeout=timeout)
    return time.perf_counter() - started


def measure(page: Page, base: str, trace_id: str, rounds: int) -> dict[str, Any]:
    usable, boot, fetch, build, wall, scroll_p50, scroll_max = [], [], [], [], [], [], []
    rows = 0
    for _ in range(rounds):
        page.goto("about:blank")
        started = time.perf_counter()
        page.goto(f"{base}/ui/trace/{trace_id}", timeout=120)
        page.wait_for("document.body.dataset.ready === location.pathname", timeout=120, interval=0.01)
        result = page.js(USABLE_JS)
        wall.append((time.perf_counter() - started) * 1000)
        assert result["drawn"], "the middle of the timeline was not drawn"
        usable.append(result["usable"])
        boot.append(result["start"])
        fetch.append(result["fetched"] - result["start"])
        build.append(result["built"] - result["fetched"])
        rows = result["rows"]
        s = page.js(SCROLL_JS)
        scroll_p50.append(s["p50"])
        scroll_max.append(s["max"])
    med = statistics.median
    return {
        "usable_ms": med(usable),
        "usable_max_ms": max(usable),
        "boot_ms": med(boot),
        "fetch_parse_ms": med(fetch),
        "build_draw_ms": med(build),
        "wall_ms": med(wall),
        "dom_rows": rows,
        "scroll_frame_p50_ms": med(scroll_p50),
        "scroll_frame_max_ms": max(scroll_max),
    }


def fetch_json(base: str, trace_id: str, rounds: int) -> dict[str, Any]:
    """``GET /api/traces/{id}`` from a Python client: as the console asks for it (``tree=false``,
    no nested ``roots``) and the default response (``spans`` and ``roots``)."""
    out: dict[str, Any] = {}
    with httpx.Client(timeout=120) as client:
        for key, params in (("", {"tree": "false"}), ("full_", {})):
            times, size = [], 0
            for _ in range(rounds):
                started = time.perf_counter()
                response = client.get(f"{base}/api/traces/{trace_id}", params=params)
                response.raise_for_status()
                times.append((time.perf_counter() - started) * 1000)
                size = len(response.content)
            out[f"{key}fetch_ms"], out[f"{key}bytes"] = statistics.median(times), size
    return out


def screenshots(page: Page, base: str, out: Path, demo_trace: str, big: str, doc: Path | None) -> list[Path]:
    shots: list[Path] = []

    def shot(name: str, path: str, *, settle: float = 0.4) -> Path:
        wait_ready(page, base + path)
        time.sleep(settle)
        shots.append(page.screenshot(out / f"{name}.png"))
        return shots[-1]

    shot("traces", "/ui/traces?since=1h&limit=50")
    trace = shot("trace", f"/ui/trace/{demo_trace}")
    if doc is not None:
        doc.parent.mkdir(parents=True, exist_ok=True)
        doc.write_bytes(trace.read_bytes())
    spans = httpx.get(f"{base}/api/traces/{demo_trace}", timeout=30).json()["spans"]
    chat = next(
        (s for s in spans if s["operation"] == "chat" and "gen_ai.input.messages" in s["attributes"]), None
    )
    if chat is not None:
        shot("trace-chat", f"/ui/trace/{demo_trace}?span={chat['span_id']}")
    shot("trace-10k", f"/ui/trace/{big}")
    for name in ("agents", "topology", "alerts", "oncall"):
        shot(name, f"/ui/{name}")
    return shots


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--screenshots", type=Path, help="folder for a PNG of every page")
    parser.add_argument("--doc", type=Path, help="also write the trace page's PNG here")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of demo traffic")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)

    from reach_collector.demo.pager import Pager
    from reach_otel.testing.fake_llm import FakeLLMServer

    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="reach-console-bench-") as tmp_name, Pager() as pager:
        tmp = Path(tmp_name)
        server = start_collector(tmp, pager, "console")
        try:
            with FakeLLMServer() as llm:
                print(f"collector {server.url}; demo traffic for {args.duration:.0f} s …", flush=True)
                run_demo_traffic(server.url, llm.openai_base_url, args.duration)
            time.sleep(3)  # a few more alert evaluations over the last spans
            ids = {}
            for n, seed in ((1_000, 101), (10_000, 102)):
                body, info = agent_trace(n, seed=seed)
                post(server.url, body)
                ids[n] = info.trace_id
            demo = [
                t
                for t in httpx.get(f"{server.url}/api/traces", params={"limit": 200}, timeout=30).json()[
                    "traces"
                ]
                if t["trace_id"] not in ids.values()
            ]
            chosen = max(demo, key=lambda t: (t["hops"], t["error_count"] > 0, -t["span_count"]))["trace_id"]
            results: dict[int, dict[str, Any]] = {}
            with Browser() as browser:
                page = browser.page()
                if args.screenshots:  # first, while the incident's alerts still fire
                    args.screenshots.mkdir(parents=True, exist_ok=True)
                    shots = screenshots(page, server.url, args.screenshots, chosen, ids[10_000], args.doc)
                    # The sign-in a collector with a query token shows first.
                    signed = start_collector(tmp, pager, "signin", "auth: {query_token: bench-token}\n")
                    try:
                        page.goto(signed.url + "/ui/traces")
                        page.wait_for("!!document.getElementById('signin')")
                        shots.append(page.screenshot(args.screenshots / "signin.png"))
                    finally:
                        signed.stop()
                    for s in shots:
                        print(f"screenshot {s} ({s.stat().st_size // 1024} KB)")
                for n, trace_id in ids.items():
                    results[n] = {
                        **measure(page, server.url, trace_id, args.rounds),
                        **fetch_json(server.url, trace_id, args.rounds),
                    }
                unexpected = [e for e in page.events.errors if "/api/topology" not in e and "401" not in e]
                if unexpected:
                    print("page errors:", *unexpected, sep="\n  ")
        finally:
            import reach_otel

            reach_otel.shutdown(timeout=5)
            server.stop()

    print()
    print(
        "| spans | trace JSON (console / default) | fetch, HTTP client (console / default) | page boot | "
        "fetch+parse in page | rows+draw | usable from navigation | worst round | DOM rows | "
        "scroll frame p50 / max |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, r in results.items():
        print(
            f"| {n:,} | {r['bytes'] / 1e6:.1f} / {r['full_bytes'] / 1e6:.1f} MB | "
            f"{r['fetch_ms']:.0f} / {r['full_fetch_ms']:.0f} ms | {r['boot_ms']:.0f} ms | "
            f"{r['fetch_parse_ms']:.0f} ms | "
            f"{r['build_draw_ms']:.0f} ms | **{r['usable_ms']:.0f} ms** | {r['usable_max_ms']:.0f} ms | "
            f"{r['dom_rows']} | "
            f"{r['scroll_frame_p50_ms']:.0f} / {r['scroll_frame_max_ms']:.0f} ms |"
        )
    print(
        f"\nrounds={args.rounds} (medians); demo traffic {args.duration:.0f} s; viewport 1280×800; "
        f"1-minute load average {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    )
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

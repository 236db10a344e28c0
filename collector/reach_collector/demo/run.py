"""``reach-otel demo``: start everything, drive the traffic, then show what the collector saw.

The collector runs as a child process on a local DuckDB file with the demo's own configuration
(short ``for`` durations so alerts fire within the run, a rotation whose webhooks point at the
demo's pager). This process is the instrumented application: it talks to a local fake LLM through
the real ``openai`` client.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

import reach_otel
from reach_collector.cli.render import console as terminal
from reach_collector.demo.pager import Pager
from reach_collector.demo.report import (
    requests_in_words,
    show_alerts,
    show_loop,
    show_metrics,
    show_topology,
    show_trace,
)
from reach_collector.demo.support import MODEL, SupportDesk
from reach_collector.demo.traffic import drive

DEFAULT_DB = "./reach-data/demo.duckdb"
AGENTS = ("TriageAgent", "BillingAgent", "TechSupportAgent", "ReportingAgent")
LOST_AGENT = "ReportingAgent"  # its heartbeat stops part-way: P2


def demo_config(pager: Pager, start: datetime) -> str:
    """The collector configuration the demo runs with (YAML), stated in full so it can be read."""
    midnight = start.replace(hour=0, minute=0, second=0, microsecond=0).strftime("%Y-%m-%dT%H:%M:%S")
    return f"""# reach-otel demo: alert durations are shortened so the alerts fire within one short run.
time_zone: UTC
prices:
  {MODEL}: {{input: 0.15, output: 0.60}}
alerting:
  interval: 1s
  registry: {pager.url}/registry
  thresholds: {{TechSupportAgent: 1000}}
  rules:
    ReachSuccessRateLow: {{for: 8s, below: 0.5, window: 12s, min_calls: 5}}
    ReachP99LatencyHigh: {{for: 5s, factor: 1.5, window: 12s, min_calls: 3}}
    ReachAgentHeartbeatLost: {{for: 0s, after: 5s}}
    # Triage → Billing commits less once refunds fail: its error budget burns, Billing's owner is paged.
    DeskEdgeSLO:
      {{type: edge_slo, objective: 0.9, min_handoffs: 3, windows: [{{long: 12s, short: 4s, factor: 2}}]}}
    # A judge scores Billing's answers: refunds answered with the wrong amount page Billing's owner.
    BillingAnswerQuality:
      {{type: quality, evaluation: correctness, good_labels: [correct], objective: 0.8, min_evaluations: 3,
       windows: [{{long: 12s, short: 4s, factor: 2}}]}}
  repeat: 15s
users:
  alice: {{webhook: "{pager.webhook("alice")}"}}
  bob: {{webhook: "{pager.webhook("bob")}"}}
  carol: {{webhook: "{pager.webhook("carol")}"}}
  mgr: {{webhook: "{pager.webhook("mgr")}"}}
  dave: {{webhook: "{pager.webhook("dave")}"}}
schedules:
  primary:
    layers:
      - {{name: daily, start: {midnight}, length: 1d, members: [alice, bob, carol]}}
escalation_policies:
  p0: {{steps: [{{notify: {{schedule: primary}}, escalate_after: 12s}}, {{notify: {{users: [mgr]}}}}]}}
routing:
  P0: {{escalation_policy: p0}}
  P1: {{notify: {{users: [bob, carol]}}}}
  P2: {{action: deregister, page: false}}
owners:
  BillingAgent: {{users: [dave]}}  # edge and quality SLOs page the owner of the agent
"""


DEFAULT_PORT = 4318
DEFAULT_DURATION_S = 45.0
MAX_DURATION_S = 24 * 3600.0


class DemoArgumentError(ValueError):
    """A ``reach-otel demo`` argument that cannot be used; its message is the one line shown."""


def _bind(port: int) -> int | None:
    """The port bound on loopback (the free one chosen for 0), or None when it is taken."""
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return None
        return int(sock.getsockname()[1])


def choose_port(requested: int | None) -> int:
    """``--port`` is honoured or refused; without it the OTLP port, else any free one."""
    if requested is not None:
        if not 1 <= requested <= 65535:
            raise DemoArgumentError(f"--port {requested}: a port is a number from 1 to 65535")
        if _bind(requested) is None:
            raise DemoArgumentError(f"--port {requested}: the port is in use; choose another or leave it out")
        return requested
    port = _bind(DEFAULT_PORT) or _bind(0)
    if port is None:  # pragma: no cover - loopback with no free port at all
        raise DemoArgumentError("no free port on 127.0.0.1")
    return port


def choose_duration(requested: float | None) -> float:
    if requested is None:
        return DEFAULT_DURATION_S
    if not 0 < requested <= MAX_DURATION_S:  # also refuses NaN
        raise DemoArgumentError(
            f"--duration {requested:g}: seconds of traffic, more than 0 and at most {MAX_DURATION_S:.0f}"
        )
    return float(requested)


def choose_db(requested: str | None) -> Path:
    """The demo's DuckDB file: its folder is created and must be writable; stale files are removed."""
    shown = requested or DEFAULT_DB
    db = Path(shown).expanduser().resolve()
    if db.is_dir():
        raise DemoArgumentError(f"--db {shown}: that is a folder; give a file name such as demo.duckdb")
    try:
        db.parent.mkdir(parents=True, exist_ok=True)
        for stale in (db, db.with_suffix(db.suffix + ".wal")):
            stale.unlink(missing_ok=True)
        db.with_suffix(".yaml").write_text("")  # the config goes beside it: proves the folder is writable
    except OSError as exc:
        raise DemoArgumentError(f"--db {shown}: cannot write there ({exc.strerror or exc})") from exc
    return db


class Collector:
    """The collector as a child process: ``python -m reach_collector`` with the demo config."""

    def __init__(self, db: Path, port: int, config: Path) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.log = db.with_suffix(".log")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_"))}
        cmd = [sys.executable, "-m", "reach_collector", "--port", str(port), "--grpc-port", "0"]
        cmd += ["--db", str(db), "--config", str(config)]
        self._log_file = self.log.open("w")
        self.proc = subprocess.Popen(cmd, env=env, stdout=self._log_file, stderr=subprocess.STDOUT)

    def wait_healthy(self, timeout: float = 30) -> None:
        from reach_collector.cli.client import QueryError, get_json

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the collector exited; see {self.log}:\n{self.log.read_text()[-2000:]}")
            try:
                get_json(self.url, "/healthz", timeout=1)
                return
            except QueryError:
                time.sleep(0.1)
        raise RuntimeError(f"the collector did not start within {timeout:.0f}s; see {self.log}")

    def get(self, path: str, **params: Any) -> Any:
        from reach_collector.cli.client import get_json

        return get_json(self.url, path, [(k, str(v)) for k, v in params.items()])

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._log_file.close()


def _run_traffic(desk: SupportDesk, duration: float, console: Console) -> Counter[str]:
    heartbeats = {agent: reach_otel.heartbeat(agent, every=1.0) for agent in AGENTS}
    lost_at = duration * 0.3
    with Progress(
        TextColumn("[bold]traffic"),
        BarColumn(),
        TextColumn("{task.fields[stats]}"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    ) as progress:
        task = progress.add_task("traffic", total=1.0, stats="")

        def on_progress(done: float, outcomes: Counter[str]) -> None:
            beat = heartbeats.get(LOST_AGENT)
            if beat is not None and done * duration >= lost_at and beat.running:
                beat.stop(deregister=False)  # the agent dies: no goodbye, so its heartbeat is lost (P2)
                progress.console.print(f"[yellow]{LOST_AGENT} stopped sending heartbeats")
            stats = f"{outcomes['ok']} ok, {outcomes['error']} failed, {outcomes['pingpong']} ping-pong"
            progress.update(task, completed=done, stats=stats)

        outcomes = asyncio.run(drive(desk, duration, progress=on_progress))
    for beat in heartbeats.values():
        if beat is not None:
            beat.stop()
    return outcomes


def _section(show: Any, collector: Collector, console: Console) -> Any:
    """Print one part of the report; a part the collector cannot answer says so and the rest goes on."""
    from reach_collector.cli.client import QueryError

    try:
        return show(collector, console)
    except QueryError as exc:
        name = getattr(getattr(show, "func", show), "__name__", "section").removeprefix("show_")
        console.print(f"[yellow]{name}: not available ({exc})")
        return None


def _show_serving(collector: Collector, trace_id: str | None, console: Console) -> None:
    """What to do with the collector the demo leaves running: the exact lines to paste."""
    console.rule("serving")
    console.print(f"collector: {collector.url}  (Ctrl-C to stop)", markup=False, highlight=False)
    console.print(f"web console: {collector.url}/ui/", markup=False, highlight=False)
    console.print("In another terminal, point the CLI at it and look around:")
    lines = [f"export REACH_OTEL_URL={collector.url}", "reach-otel traces --agent BillingAgent"]
    if trace_id:
        lines.append(f"reach-otel trace {trace_id}")
    lines += ["reach-otel metrics --window 5m", "reach-otel metrics --agents", "reach-otel alerts"]
    lines.append("reach-otel topology --window 5m")
    for line in lines:
        console.print(f"  {line}", markup=False, highlight=False, soft_wrap=True)
    console.print(
        f"Prometheus scrapes {collector.url}/metrics; Grafana's Tempo data source reads"
        f" {collector.url}/tempo; `reach-otel dashboards import --grafana-url URL` loads the dashboards.",
        markup=False,
        highlight=False,
    )


def _stop_on_sigterm() -> None:
    """SIGTERM (a supervisor, a test harness) ends the demo as Ctrl-C does: through its cleanup,
    so the collector it started stops too instead of outliving it."""

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, stop)


def run_demo(args: argparse.Namespace) -> int:
    from openai import AsyncOpenAI

    from reach_otel.testing.fake_llm import FakeLLMServer

    console = terminal()  # the terminal's width, else $COLUMNS, else 80: as the query commands
    try:
        duration = choose_duration(args.duration)
        port = choose_port(args.port)
        db = choose_db(args.db)
    except DemoArgumentError as exc:
        print(f"reach-otel demo: {exc}", file=sys.stderr)
        return 2
    _stop_on_sigterm()
    with Pager() as pager, FakeLLMServer() as llm:
        config = db.with_suffix(".yaml")
        config.write_text(demo_config(pager, datetime.now(timezone.utc)))
        collector = Collector(db, port, config)
        try:
            collector.wait_healthy()
            for line in (
                f"collector: {collector.url} (web console {collector.url}/ui/)",
                f"data: {db}",
                f"config: {config}",
                f"log: {collector.log}",
                f"fake LLM: {llm.openai_base_url} (OpenAI-compatible, no API key, no network)",
            ):
                console.print(line, markup=False, highlight=False)
            reach_otel.init(service_name="support-desk", endpoint=collector.url)
            reach_otel.instrument("openai")
            desk = SupportDesk(AsyncOpenAI(base_url=llm.openai_base_url, api_key="demo", max_retries=0))
            outcomes = _run_traffic(desk, duration, console)
            reach_otel.flush(timeout=10)
            console.print(f"sent {requests_in_words(outcomes)}", markup=False, highlight=False)
            time.sleep(2)  # one more alert evaluation over the last spans
            trace_id = _section(show_trace, collector, console)
            _section(show_loop, collector, console)
            _section(show_metrics, collector, console)
            _section(functools.partial(show_alerts, pager=pager), collector, console)
            _section(show_topology, collector, console)
            if args.serve:
                _show_serving(collector, trace_id, console)
                with contextlib.suppress(KeyboardInterrupt):
                    collector.proc.wait()
        except Exception as exc:  # a demo that cannot run says why, without a traceback
            console.print(f"[red]demo failed: {exc}")
            return 1
        finally:
            reach_otel.shutdown(timeout=5)
            collector.stop()
    return 0

"""Collectors for the ClickHouse tests: in-process (create_app over a store, real uvicorn on a
free loopback port) and as a subprocess (``python -m reach_collector --db clickhouse://...``), and
posting OTLP to them over real HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from typing import Any

import httpx
from collector_process import free_port
from reach_collector.app import create_app
from reach_collector.config import Settings
from reach_collector.store.base import TraceStore
from servers import ServerThread

PROTOBUF = "application/x-protobuf"


@dataclass
class InProcessCollector:
    url: str
    store: TraceStore
    app: Any
    server: ServerThread

    def close(self) -> None:
        self.server.stop()
        self.store.close()

    def post(self, body: bytes, timeout: float = 30) -> httpx.Response:
        return post(self.url, body, timeout)

    def get(self, path: str, **params: Any) -> httpx.Response:
        return httpx.get(self.url + path, params=params, timeout=30)


def start_in_process(store: TraceStore, db: str, **settings: Any) -> InProcessCollector:
    """create_app over ``store`` (retention off, no alert loop) served by uvicorn on loopback."""
    app = create_app(replace(Settings(db=db), retention_s=0, **settings), store=store, alert_loop=False)
    server = ServerThread(app).start()
    return InProcessCollector(server.url, store, app, server)


def post(url: str, body: bytes, timeout: float = 30) -> httpx.Response:
    return httpx.post(url + "/v1/traces", content=body, headers={"content-type": PROTOBUF}, timeout=timeout)


class CollectorProcess:
    """``python -m reach_collector`` on ``db`` (a clickhouse:// URL), its output captured."""

    def __init__(self, db: str, *extra: str, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = [sys.executable, "-m", "reach_collector", "--port", str(self.port), "--grpc-port", "0"]
        self.args += ["--db", db, "--retention", "0s", *extra]
        base = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_"))}
        self.env = {**base, **(env or {})}
        self.proc: subprocess.Popen[str] | None = None

    def start(self, timeout: float = 30) -> CollectorProcess:
        self.proc = subprocess.Popen(
            self.args, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"collector exited: {self.output()}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError("collector did not become healthy")

    def output(self) -> str:
        if self.proc is None or self.proc.stdout is None:
            return ""
        if self.proc.poll() is None:
            return ""
        return self.proc.stdout.read()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self) -> str:
        """SIGTERM; returns everything it printed."""
        if self.proc is None:
            return ""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        return self.output()

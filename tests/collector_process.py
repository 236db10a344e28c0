"""A real collector in a subprocess (``python -m reach_collector``) on a free loopback port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


_PORT_ATTEMPTS = 3


class _PortTaken(Exception):
    pass


class CollectorProcess:
    """``python -m reach_collector`` on ``db`` (a DuckDB path or a clickhouse:// URL), its output
    captured: ``with CollectorProcess(db) as c:`` or ``start()`` … ``stop()`` (which returns it)."""

    def __init__(self, db: Path | str, *extra: str, env: Mapping[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = [sys.executable, "-m", "reach_collector", "--port", str(self.port), "--grpc-port", "0"]
        self.args += ["--db", str(db), *extra]
        self.proc: subprocess.Popen[str] | None = None
        self.printed: str | None = None
        self.env = dict(env or {})  # set on top of this process's (whose OTEL_/REACH_ are dropped)

    def start(self, timeout: float = 30) -> CollectorProcess:
        for _ in range(_PORT_ATTEMPTS - 1):
            try:
                return self._start(timeout)
            except _PortTaken:
                self._move_to(free_port())
        return self._start(timeout)

    def _move_to(self, port: int) -> None:
        """Another port: free_port()'s was taken by another process before the collector bound it
        (the suite's workers and other runs pick free ports at the same time)."""
        self.args[self.args.index(str(self.port), self.args.index("--port"))] = str(port)
        self.port, self.url = port, f"http://127.0.0.1:{port}"

    def _start(self, timeout: float) -> CollectorProcess:
        self.printed = None
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_"))}
        env.update(self.env)
        self.proc = subprocess.Popen(
            self.args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                if f"cannot listen on 127.0.0.1:{self.port}: Address already in use" in self.output():
                    raise _PortTaken
                raise RuntimeError(f"collector exited: {self.output()}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError("collector did not become healthy")

    def output(self) -> str:
        """Everything it printed, once it has exited ("" while it runs); read once, kept."""
        if self.printed is None and self.proc is not None and self.proc.stdout is not None:
            if self.proc.poll() is None:
                return ""
            self.printed = self.proc.stdout.read()
        return self.printed or ""

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self) -> str:
        """SIGTERM (SIGKILL if it has not exited in 20 s); returns everything it printed."""
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

    def __enter__(self) -> CollectorProcess:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def get(self, path: str, **params: Any) -> Any:
        response = httpx.get(self.url + path, params=params, timeout=10)
        response.raise_for_status()
        return response.json()

    def wait_traces(self, count: int, timeout: float = 30, **params: Any) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        traces: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            traces = self.get("/api/traces", limit=100, **params)["traces"]
            if len(traces) >= count:
                return traces
            time.sleep(0.2)
        return traces

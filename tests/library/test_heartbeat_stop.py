"""A clean end deregisters the heartbeat (``status: "stopped"``), so a normal shutdown never fires P2;
a crash (kill -9, an uncaught exception) sends nothing and the agent is reported lost.

Each case is a real app in its own process beating to a small HTTP server that records requests.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

APP = textwrap.dedent(
    """
    import sys, time, reach_otel
    beat = reach_otel.heartbeat("billing-1", every=0.1, collector=sys.argv[1], endpoint="http://billing:8000")
    print("ready", flush=True)
    how = sys.stdin.readline().strip()
    if how == "stop":
        beat.stop()
        print("stopped", beat.deregistered, flush=True)
        time.sleep(0.3)  # no beat after stop(), and exit does not deregister twice
    elif how == "exit":
        sys.exit(0)
    elif how == "raise":
        raise RuntimeError("the agent crashed")
    """
)


class Recorder:
    """Records every request's path and JSON body."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.requests.append({"path": self.path, "body": body})
                self.send_response(202)
                self.send_header("content-length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stops(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["body"].get("status") == "stopped"]

    def wait_beats(self, count: int, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while len(self.requests) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(self.requests) >= count, self.requests

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    rec = Recorder()
    yield rec
    rec.close()


def start(recorder: Recorder) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_OTEL_"))}
    proc = subprocess.Popen(
        [sys.executable, "-c", APP, recorder.url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    recorder.wait_beats(2)  # the agent is alive and beating
    return proc


def end(proc: subprocess.Popen[str], how: str) -> tuple[str, str]:
    try:
        return proc.communicate(how + "\n", timeout=30)
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.mark.parametrize("how", ["end", "exit"])
def test_clean_exit_deregisters(recorder: Recorder, how: str) -> None:
    proc = start(recorder)
    _, stderr = end(proc, how)
    assert proc.returncode == 0, stderr
    assert recorder.stops() == [
        {"path": "/api/heartbeats", "body": {"agent_id": "billing-1", "status": "stopped"}}
    ]
    assert recorder.requests[-1] == recorder.stops()[0]  # the last word, no beat after it
    assert stderr == ""


def test_ctrl_c_deregisters(recorder: Recorder) -> None:
    proc = start(recorder)
    proc.send_signal(signal.SIGINT)  # KeyboardInterrupt in the app's readline: an operator's stop
    end(proc, "")
    assert len(recorder.stops()) == 1
    assert recorder.requests[-1]["body"] == {"agent_id": "billing-1", "status": "stopped"}


def test_stop_deregisters_once(recorder: Recorder) -> None:
    proc = start(recorder)
    stdout, stderr = end(proc, "stop")
    assert proc.returncode == 0, stderr
    assert stdout.split() == ["stopped", "True"]
    assert len(recorder.stops()) == 1
    assert recorder.requests[-1]["body"]["status"] == "stopped"


def test_kill_9_sends_nothing(recorder: Recorder) -> None:
    proc = start(recorder)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    time.sleep(0.3)
    assert recorder.stops() == []
    assert all(
        r["body"] == {"agent_id": "billing-1", "endpoint": "http://billing:8000"} for r in recorder.requests
    )
    end(proc, "")


def test_uncaught_exception_is_a_crash(recorder: Recorder) -> None:
    proc = start(recorder)
    _, stderr = end(proc, "raise")
    assert proc.returncode == 1
    assert "the agent crashed" in stderr
    assert recorder.stops() == []


def test_deregistering_at_exit_is_bounded_when_the_collector_hangs() -> None:
    """A collector that accepts and never answers delays exit by at most the exit bound (2 s)."""
    release = threading.Event()

    class Hang(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            release.wait(30)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hang)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    code = "import sys, time, reach_otel\nreach_otel.heartbeat('slow', every=60, collector=sys.argv[1])\n"
    code += "time.sleep(0.2)\nprint(time.time(), flush=True)\n"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_OTEL_"))}
    try:
        out = subprocess.run(
            [sys.executable, "-c", code, f"http://127.0.0.1:{server.server_address[1]}"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        exit_s = time.time() - float(out.stdout.strip())
    finally:
        release.set()
        server.shutdown()
        server.server_close()
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    assert exit_s < 2.0 + 1.0, exit_s

"""`python -m reach_collector` / `reach-otel collector`: startup lines, refusals, clean stop."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reach_collector", *args], capture_output=True, text=True, timeout=timeout
    )


def test_startup_lines_and_clean_stop(tmp_path: Path) -> None:
    port, grpc_port = _free_port(), _free_port()
    db = tmp_path / "data" / "t.duckdb"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "reach_collector",
            "--db",
            str(db),
            "--port",
            str(port),
            "--grpc-port",
            str(grpc_port),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = [proc.stdout.readline() for _ in range(4)] if proc.stdout else []
        text = "".join(lines)
        assert f"listening on http://127.0.0.1:{port}" in text
        assert f"listening on 127.0.0.1:{grpc_port} (OTLP/gRPC)" in text
        assert str(db.resolve()) in text
        assert "auth: off" in text
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).json() == {"status": "ok"}
                break
            except httpx.HTTPError:
                time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
    assert proc.returncode == 0
    assert db.exists()


def test_refuses_public_bind_without_tokens(tmp_path: Path) -> None:
    result = _run("--host", "0.0.0.0", "--port", "0", "--db", str(tmp_path / "x.duckdb"))
    assert result.returncode == 2
    assert "refusing to listen on 0.0.0.0 without auth" in result.stderr
    assert "--insecure-bind" in result.stderr


def test_bad_config_names_the_key(tmp_path: Path) -> None:
    config = tmp_path / "reach.yaml"
    config.write_text("storage: {retention: soon}\n")
    result = _run("--config", str(config))
    assert result.returncode == 2
    assert "storage.retention" in result.stderr and str(config) in result.stderr


def test_busy_port_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = _run("--port", str(port), "--grpc-port", "0", "--db", str(tmp_path / "x.duckdb"))
        assert result.returncode == 2
        assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
        result = _run("--port", "0", "--grpc-port", str(port), "--db", str(tmp_path / "y.duckdb"))
        assert result.returncode == 2
        assert "OTLP/gRPC" in result.stderr

"""`python -m reach_collector` / `reach-otel collector`: startup lines, refusals, clean stop."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


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
        assert "; spans kept 7d" in text  # the default retention, as one writes it in the config
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
        assert f"cannot listen for OTLP/gRPC on 127.0.0.1:{port}: Address already in use" in result.stderr
        # The clean line only: no raw log line of gRPC's C core before it.
        assert "add_port" not in result.stderr and "Failed to add port" not in result.stderr


def test_sigterm_stops_cleanly_and_closes_the_store(tmp_path: Path) -> None:
    port = _free_port()
    db = tmp_path / "t.duckdb"
    proc = subprocess.Popen(
        [sys.executable, "-m", "reach_collector", "--db", str(db), "--port", str(port), "--grpc-port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.05)
        # Something to close: one span, so the store has a write-ahead log until it is closed.
        request = ExportTraceServiceRequest()
        span = request.resource_spans.add().scope_spans.add().spans.add(name="s")
        span.trace_id, span.span_id = b"\x01" * 16, b"\x02" * 8
        span.start_time_unix_nano, span.end_time_unix_nano = time.time_ns() - 1000, time.time_ns()
        body = request.SerializeToString()
        assert (
            httpx.post(
                f"http://127.0.0.1:{port}/v1/traces",
                content=body,
                headers={"content-type": "application/x-protobuf"},
            ).status_code
            == 200
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "collector stopped; the store is closed" in out
    assert "leaked" not in err and "Traceback" not in err
    assert not Path(str(db) + ".wal").exists()  # closed: the log was checkpointed into the file

"""`reach-otel demo` refuses arguments it cannot use with one line, before starting anything."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest


def _demo(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reach_otel", "demo", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--db", "/proc/reach-demo/x.duckdb"], "--db /proc/reach-demo/x.duckdb: cannot write there"),
        (["--duration", "0"], "--duration 0: seconds of traffic, more than 0"),
        (["--duration", "-5"], "--duration -5: seconds of traffic"),
        (["--duration", "nan"], "--duration nan: seconds of traffic"),
        (["--port", "0"], "--port 0: a port is a number from 1 to 65535"),
        (["--port", "70000"], "--port 70000: a port is a number from 1 to 65535"),
    ],
)
def test_bad_argument_is_one_line(args: list[str], says: str) -> None:
    result = _demo(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines == [f"reach-otel demo: {lines[0].removeprefix('reach-otel demo: ')}"]
    assert says in lines[0]
    assert "Traceback" not in result.stderr + result.stdout


def test_a_folder_is_not_a_db(tmp_path: Path) -> None:
    result = _demo("--db", str(tmp_path))
    assert result.returncode == 2
    assert "that is a folder" in result.stderr


def test_busy_port_is_refused_not_replaced() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = _demo("--port", str(port))
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"reach-otel demo: --port {port}: the port is in use; choose another or leave it out"
    )


def test_serve_prints_the_lines_to_paste(tmp_path: Path) -> None:
    """`--serve` says how to point the CLI at the collector it leaves running, and that works."""
    db = str(tmp_path / "d.duckdb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "reach_otel", "demo", "--db", db, "--duration", "4", "--serve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    seen: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            if "reach-otel alerts" in line and any("export REACH_OTEL_URL=" in s for s in seen):
                break
        text = "".join(seen)
        export = next(s.strip() for s in seen if s.strip().startswith("export REACH_OTEL_URL="))
        url = export.removeprefix("export REACH_OTEL_URL=")
        assert url.startswith("http://127.0.0.1:")
        assert "reach-otel trace " in text
        assert f"web console: {url}/ui/" in text
        assert httpx.get(f"{url}/ui/", timeout=5).status_code == 200
        listed = subprocess.run(
            [sys.executable, "-m", "reach_otel", "traces", "--url", url, "--limit", "3"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert listed.returncode == 0, listed.stderr
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    # SIGTERM stopped the collector the demo had left running, too (it does not outlive the demo)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and _answers(url):
        time.sleep(0.2)
    assert not _answers(url), f"the demo's collector at {url} still runs after the demo was stopped"


def _answers(url: str) -> bool:
    try:
        return httpx.get(url + "/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False

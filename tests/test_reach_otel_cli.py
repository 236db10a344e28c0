"""The `reach-otel` command: help, version, the demo entry point and bad input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from collector_process import CollectorProcess

from reach_otel import __version__


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reach_otel", *args], capture_output=True, text=True, timeout=120
    )


def test_help_lists_the_demo() -> None:
    out = run("--help")
    assert out.returncode == 0
    assert "demo" in out.stdout


def test_version() -> None:
    out = run("--version")
    assert out.returncode == 0
    assert __version__ in out.stdout


def test_unknown_command_is_a_clear_error() -> None:
    out = run("frobnicate")
    assert out.returncode == 2
    assert "invalid choice" in out.stderr
    assert "Traceback" not in out.stderr


def test_no_command_prints_help_and_fails() -> None:
    out = run()
    assert out.returncode == 2
    assert "usage" in out.stdout


def test_a_reader_that_goes_away_is_no_traceback(tmp_path: Path) -> None:
    """`reach-otel … | head`: the pipe closes before the command has printed everything; the
    command stops quietly, exit 0, with no traceback on stderr."""
    with CollectorProcess(tmp_path / "t.duckdb") as collector:
        for args in (("--help",), ("traces", "--url", collector.url), ("alerts", "--url", collector.url)):
            proc = subprocess.Popen(
                [sys.executable, "-m", "reach_otel", *args],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            assert proc.stdout is not None and proc.stderr is not None
            proc.stdout.close()  # before the command writes a byte
            err = proc.stderr.read()
            assert proc.wait(timeout=60) == 0, err
            assert "Traceback" not in err and "BrokenPipe" not in err, err

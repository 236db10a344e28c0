"""The `reach-otel` command: help, version, the demo entry point and bad input."""

from __future__ import annotations

import subprocess
import sys

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

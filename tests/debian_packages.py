"""Real servers and tools a test needs from Debian (prometheus, alertmanager, chromium,
clickhouse-server, clang): found on PATH, or installed with apt-get when missing and we are root.
What cannot be had skips the test — except under ``CI=true``, where it fails it: CI never passes
by skipping what it was meant to run. Installs take a file lock, so that test processes running at
once (pytest-xdist's workers) install one after the other."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")


def unavailable(what: str, reason: str) -> None:
    """Skip (fail under CI=true) because ``what`` cannot be had."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{what} unavailable on CI: {reason}")
    pytest.skip(f"{what}: {reason}")


@contextlib.contextmanager
def install_lock() -> Iterator[None]:
    """Held while installing: apt-get fails at once, rather than wait, when another apt-get holds
    dpkg's lock, and two pip installs into one environment overwrite each other's files."""
    with open(Path(tempfile.gettempdir()) / "reach-otel-tests-install.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_installed(
    what: str, find: Callable[[], T | None], packages: Sequence[str], timeout: float = 1500
) -> T:
    """``find()``'s answer, installing ``packages`` first when it has none."""
    found = find()
    if found is not None:
        return found
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("apt-get") is None:
        unavailable(what, "missing, and apt-get as root is not available")
    with install_lock():
        found = find()  # installed by another process while this one waited
        if found is None:
            _apt_install(what, packages, timeout)
            found = find()
    if found is None:
        unavailable(what, f"installed {', '.join(packages)} but it is still not on PATH")
    assert found is not None
    return found


def _apt_install(what: str, packages: Sequence[str], timeout: float) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (
        ["apt-get", "update"],
        ["apt-get", "install", "-y", "--no-install-recommends", *packages],
    ):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            unavailable(what, f"{' '.join(command)} failed: {(done.stderr or done.stdout).strip()[-500:]}")

"""Virtual environments built once by pip and reused while unchanged: what the CrewAI tests
(``crewai_env``) and the frameworks benchmark (``bench/frameworks/envs.py``) run their apps in,
outside the dev environment and outside the checkout.

An environment's folder is named by a hash of what it must hold (the Python version and the
requirements); a marker written last says it is complete, so a different hash means another folder
and an interrupted build is started again. Builds take a file lock beside the folder, so two runs
never build the same one at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["EnvUnavailable", "cache_root", "clean_env", "ensure", "folder_for", "run"]

_MARKER = ".reach-otel-env.json"


class EnvUnavailable(RuntimeError):
    """The environment could not be built (no package index, a resolver conflict, ...)."""


def cache_root(variable: str, kind: str) -> Path:
    """Where environments of one ``kind`` live: ``$variable`` if set, else
    ``~/.cache/reach-otel/KIND`` (under ``$XDG_CACHE_HOME`` when that is set)."""
    base = os.environ.get(variable)
    if base:
        return Path(base)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "reach-otel" / kind


def folder_for(root: Path, name: str, reqs: list[str]) -> Path:
    """Where environment ``name`` holding ``reqs`` lives under ``root``."""
    what = {"python": sys.version.split()[0], "implementation": sys.implementation.name, "requires": reqs}
    return root / f"{name}-{hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]}"


def clean_env() -> dict[str, str]:
    """This process's environment without what would point pip or Python at the dev environment."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PIP_REQUIRE"))}


def run(args: list[str], timeout: float, env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
    """Run one build step; EnvUnavailable with the end of its output when it fails or overruns."""
    try:
        out = subprocess.run(
            args,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=clean_env() if env is None else env,
            cwd=cwd,
        )
    except subprocess.TimeoutExpired as exc:
        raise EnvUnavailable(f"{' '.join(args[:4])}... took over {timeout:.0f} s") from exc
    if out.returncode != 0:
        raise EnvUnavailable(f"{' '.join(args[:4])}... failed:\n{(out.stdout + out.stderr)[-3000:]}")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _ready(folder: Path, reqs: list[str]) -> bool:
    try:
        marker = json.loads((folder / _MARKER).read_text())
    except (OSError, ValueError):
        return False
    return bool(marker.get("requires") == reqs and (folder / "bin" / "python").exists())


def ensure(
    folder: Path,
    reqs: list[str],
    *,
    install_timeout_s: float,
    check: Callable[[Path], None] | None = None,
) -> float | None:
    """Make ``folder`` an environment holding ``reqs`` unless it already is one; ``check`` (given
    the interpreter) runs after the install and before the marker. Returns the build's seconds,
    None when an existing environment was reused."""
    if _ready(folder, reqs):
        return None
    with _locked(folder.with_suffix(".lock")):
        if _ready(folder, reqs):  # another run built it while we waited
            return None
        started = time.monotonic()
        shutil.rmtree(folder, ignore_errors=True)  # a half-built one from an interrupted run
        run([sys.executable, "-m", "venv", str(folder)], 120)
        python = folder / "bin" / "python"
        run(
            [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *reqs],
            install_timeout_s,
        )
        if check is not None:
            check(python)
        built = time.monotonic() - started
        marker = {"requires": reqs, "built_in_s": round(built, 1), "built_at": time.time()}
        (folder / _MARKER).write_text(json.dumps(marker))
        return built

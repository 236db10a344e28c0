"""A virtual environment of its own for the CrewAI tests, built once and reused while unchanged.

CrewAI pins ``openai<3``, ``mcp<2`` and ``pydantic<2.13``, which the dev environment's
``openai-agents`` and ``mcp`` exclude, so CrewAI cannot live there. :func:`crewai_python` returns
the interpreter of an environment holding CrewAI and reach_otel's own dependencies, installed from
the package index by pip; apps run there as subprocesses with this checkout on ``PYTHONPATH``, so
they import the library as it is now (no install into the tree, no rebuild of the collector's C
extension, which is not needed there).

The environment lives outside the checkout, in ``$REACH_OTEL_TEST_ENVS`` or the user's cache folder
(``~/.cache/reach-otel/test-envs``), named by a hash of what it must hold: the Python version and
the requirements. A marker written last says it is complete; a different hash means another folder.
Builds take a file lock, so two test runs never build the same folder at once.
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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pip carries the same parser
    from pip._vendor import tomli as tomllib  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parents[1]
#: The CrewAI release these tests run against; bump it deliberately (the folder name follows).
CREWAI = "crewai==1.15.30"
_MARKER = ".reach-otel-env.json"
_INSTALL_TIMEOUT_S = 1200


@dataclass(frozen=True)
class Env:
    python: Path
    built_in_s: float | None  # None when an existing environment was reused


class EnvUnavailable(RuntimeError):
    """The environment could not be built (no package index, a resolver conflict, ...)."""


def requirements() -> list[str]:
    """CrewAI plus reach_otel's runtime dependencies, as pyproject.toml declares them."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return [CREWAI, *project["dependencies"]]


def _key(reqs: list[str]) -> str:
    what = {"python": sys.version.split()[0], "implementation": sys.implementation.name, "requires": reqs}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]


def _root() -> Path:
    base = os.environ.get("REACH_OTEL_TEST_ENVS")
    if base:
        return Path(base)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "reach-otel" / "test-envs"


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
    return marker.get("requires") == reqs and (folder / "bin" / "python").exists()


def _run(args: list[str], timeout: float, env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
    if env is None:
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PIP_REQUIRE"))
        }
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    except subprocess.TimeoutExpired as exc:
        raise EnvUnavailable(f"{' '.join(args[:4])}... took over {timeout:.0f} s") from exc
    if out.returncode != 0:
        raise EnvUnavailable(f"{' '.join(args[:4])}... failed:\n{(out.stdout + out.stderr)[-3000:]}")


def crewai_env() -> Env:
    """The CrewAI environment, building it first when it is missing or out of date."""
    reqs = requirements()
    folder = _root() / f"crewai-{_key(reqs)}"
    if _ready(folder, reqs):
        return Env(folder / "bin" / "python", None)
    with _locked(folder.with_suffix(".lock")):
        if _ready(folder, reqs):  # another run built it while we waited
            return Env(folder / "bin" / "python", None)
        started = time.monotonic()
        shutil.rmtree(folder, ignore_errors=True)  # a half-built one from an interrupted run
        _run([sys.executable, "-m", "venv", str(folder)], 120)
        python = folder / "bin" / "python"
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        _run([*pip, *reqs], _INSTALL_TIMEOUT_S)
        # Imported, CrewAI makes folders under the home folder (named after the working one): keep them here.
        check = {**app_env(), "HOME": str(folder), "CREWAI_STORAGE_DIR": str(folder / "crewai-storage")}
        _run([str(python), "-c", "import crewai, opentelemetry.instrumentation, wrapt"], 300, check, folder)
        built = time.monotonic() - started
        marker = {"requires": reqs, "built_in_s": round(built, 1), "built_at": time.time()}
        (folder / _MARKER).write_text(json.dumps(marker))
        return Env(python, built)


def app_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment variables for an app run in the CrewAI environment: this checkout importable,
    CrewAI's own telemetry and tracing off (they would reach out to the network), storage in tmp."""
    env = {
        k: v
        for k, v in (base if base is not None else os.environ).items()
        if not k.startswith(("OTEL_", "REACH_", "_REACH_", "OPENAI_", "PYTHON", "VIRTUAL_ENV", "CREWAI_"))
    }
    env.update(
        PYTHONPATH=str(REPO),
        CREWAI_DISABLE_TELEMETRY="true",
        CREWAI_DISABLE_TRACKING="true",
        CREWAI_TRACING_ENABLED="false",
        CREWAI_DISABLE_VERSION_CHECK="true",
        CREWAI_TESTING="true",
    )
    return env

"""A virtual environment of its own for the CrewAI tests, built once and reused while unchanged.

CrewAI pins ``openai<3``, ``mcp<2`` and ``pydantic<2.13``, which the dev environment's
``openai-agents`` and ``mcp`` exclude, so CrewAI cannot live there. :func:`crewai_python` returns
the interpreter of an environment holding CrewAI and reach_otel's own dependencies, installed from
the package index by pip; apps run there as subprocesses with this checkout on ``PYTHONPATH``, so
they import the library as it is now (no install into the tree, no rebuild of the collector's C
extension, which is not needed there).

The environment lives outside the checkout, in ``$REACH_OTEL_TEST_ENVS`` or the user's cache folder
(``~/.cache/reach-otel/test-envs``), built and reused as ``cached_venv`` keeps them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from cached_venv import EnvUnavailable, cache_root, ensure, folder_for, run

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pip carries the same parser
    from pip._vendor import tomli as tomllib  # type: ignore[no-redef]

__all__ = ["CREWAI", "Env", "EnvUnavailable", "app_env", "crewai_env", "requirements"]

REPO = Path(__file__).resolve().parents[1]
#: The CrewAI release these tests run against; bump it deliberately (the folder name follows).
CREWAI = "crewai==1.15.30"
_INSTALL_TIMEOUT_S = 1200


@dataclass(frozen=True)
class Env:
    python: Path
    built_in_s: float | None  # None when an existing environment was reused


def requirements() -> list[str]:
    """CrewAI plus reach_otel's runtime dependencies, as pyproject.toml declares them."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return [CREWAI, *project["dependencies"]]


def crewai_env() -> Env:
    """The CrewAI environment, building it first when it is missing or out of date."""
    reqs = requirements()
    folder = folder_for(cache_root("REACH_OTEL_TEST_ENVS", "test-envs"), "crewai", reqs)

    def check(python: Path) -> None:
        # Imported, CrewAI makes folders under the home folder (named after the working one): keep them here.
        env = {**app_env(), "HOME": str(folder), "CREWAI_STORAGE_DIR": str(folder / "crewai-storage")}
        run([str(python), "-c", "import crewai, opentelemetry.instrumentation, wrapt"], 300, env, folder)

    built = ensure(folder, reqs, install_timeout_s=_INSTALL_TIMEOUT_S, check=check)
    return Env(folder / "bin" / "python", built)


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

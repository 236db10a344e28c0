"""The virtual environments the frameworks benchmark runs its apps in, built on first use and reused.

Peers' instrumentations never go into the dev environment: each framework gets an environment of
its own holding the framework, reach_otel's runtime dependencies and both peers' instrumentations
(OpenInference's and OpenLLMetry's), pinned. Apps run there as subprocesses with this checkout on
``PYTHONPATH``, so they import reach_otel as it is now. CrewAI pins ``openai<3``, ``mcp<2`` and
``pydantic<2.13`` and so has its own; ``mcp1`` holds the last 1.x MCP SDK, the one the peers' MCP
instrumentations were written for (ours needs 2.x).

Environments live in ``$REACH_OTEL_BENCH_ENVS`` or ``~/.cache/reach-otel/bench-envs``, built and
reused as the tests' own (``tests/cached_venv.py``) are.

    python bench/frameworks/envs.py [NAME ...]    # build (or find) them and print their interpreters
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pip carries the same parser
    from pip._vendor import tomli as tomllib  # type: ignore[no-redef, unused-ignore]

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from cached_venv import cache_root, clean_env, ensure, folder_for  # noqa: E402

OPENINFERENCE = "openinference-instrumentation"
OPENLLMETRY = "opentelemetry-instrumentation"  # the traceloop project's packages share the contrib prefix
_PEER_VERSIONS = {
    f"{OPENINFERENCE}-langchain": "0.1.80",
    f"{OPENINFERENCE}-crewai": "1.1.21",
    f"{OPENINFERENCE}-openai": "0.1.66",
    f"{OPENINFERENCE}-mcp": "2.0.13",
    f"{OPENLLMETRY}-langchain": "0.62.4",
    f"{OPENLLMETRY}-crewai": "0.62.4",
    f"{OPENLLMETRY}-openai": "0.62.4",
    f"{OPENLLMETRY}-mcp": "0.62.4",
}


def _peers(*frameworks: str) -> list[str]:
    return [
        f"{prefix}-{name}=={_PEER_VERSIONS[f'{prefix}-{name}']}"
        for name in frameworks
        for prefix in (OPENINFERENCE, OPENLLMETRY)
    ]


def _extra(name: str) -> list[str]:
    return list(_project()["optional-dependencies"][name])


def _project() -> dict[str, Any]:
    return dict(tomllib.loads((REPO / "pyproject.toml").read_text())["project"])


def requirements(name: str) -> list[str]:
    """What environment ``name`` holds, on top of reach_otel's runtime dependencies."""
    base = list(_project()["dependencies"])
    if name == "langgraph":
        extra = [*_extra("langgraph"), *_peers("langchain")]
    elif name == "crewai":
        # The CrewAI release the tests run against; the LLM calls go through the openai client.
        extra = ["crewai==1.15.30", *_peers("crewai", "openai")]
    elif name == "mcp":
        extra = [*_extra("mcp"), *_extra("a2a"), "uvicorn>=0.29", "httpx>=0.27", *_peers("mcp")]
    elif name == "mcp1":
        extra = ["mcp>=1.24,<2", *_peers("mcp")]
    else:
        raise KeyError(f"no environment named {name!r}; known: {', '.join(NAMES)}")
    return [*base, *extra]


NAMES = ("langgraph", "crewai", "mcp", "mcp1")


def python(name: str) -> Path:
    """The interpreter of environment ``name``, building the environment first if needed."""
    reqs = requirements(name)
    folder: Path = folder_for(cache_root("REACH_OTEL_BENCH_ENVS", "bench-envs"), name, reqs)
    ensure(folder, reqs, install_timeout_s=1800)
    return folder / "bin" / "python"


def versions(name: str, packages: list[str]) -> dict[str, str]:
    """Installed versions of ``packages`` in environment ``name`` (missing ones left out)."""
    code = (
        "import importlib.metadata as m, json, sys\n"
        "out = {}\n"
        "for p in sys.argv[1:]:\n"
        "    try: out[p] = m.version(p)\n"
        "    except m.PackageNotFoundError: pass\n"
        "print(json.dumps(out))"
    )
    out = subprocess.run(
        [str(python(name)), "-c", code, *packages],
        capture_output=True,
        text=True,
        env=clean_env(),
        check=True,
    )
    return dict(json.loads(out.stdout))


def main(argv: list[str]) -> None:
    for name in argv or NAMES:
        started = time.monotonic()
        print(f"{name}: {python(name)} ({time.monotonic() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

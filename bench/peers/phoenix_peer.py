"""Arize Phoenix as a peer trace store: its own virtualenv (created on demand), server start, span
count and trace lookup through its public APIs. Used by ``bench/peers/compare.py``."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

PROJECT = "default"  # the bodies carry no project attribute and no header: Phoenix's default project
COUNT_QUERY = json.dumps({"query": "{ projects { edges { node { name recordCount } } } }"})


def _python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def version(python: Path) -> str:
    out = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('arize-phoenix'))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return out.stdout.strip() if out.returncode == 0 else ""


def ensure_venv(venv: Path, requirement: str, timeout_s: float = 1800) -> tuple[Path | None, str]:
    """(python of a virtualenv holding Phoenix, "") or (None, why not). Installs on first use,
    into ``venv`` only (no system site-packages, nothing in the caller's environment)."""
    python = _python(venv)
    if python.exists() and version(python):
        return python, ""
    print(f"installing {requirement} into its own virtualenv {venv} ...", file=sys.stderr)
    try:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, timeout=300)
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", requirement],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"creating the virtualenv failed: {exc}"
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return None, f"`pip install {requirement}` failed: " + " / ".join(tail)
    if not version(python):
        return None, f"`pip install {requirement}` succeeded but `import phoenix` metadata is missing"
    return python, ""


def start(python: Path, workdir: Path, port: int, grpc_port: int) -> subprocess.Popen[bytes]:
    """Phoenix on 127.0.0.1:port, its SQLite database in ``workdir``, telemetry off."""
    env = dict(os.environ)
    env.update(
        {
            "PHOENIX_WORKING_DIR": str(workdir),
            "PHOENIX_PORT": str(port),
            "PHOENIX_GRPC_PORT": str(grpc_port),
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_TELEMETRY_ENABLED": "false",
            "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
        }
    )
    with (workdir / "phoenix.log").open("wb") as log:
        return subprocess.Popen(
            [str(python), "-m", "phoenix.server.main", "serve"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stored(conn: http.client.HTTPConnection) -> int:
    """Spans queryable in Phoenix now: the sum of every project's GraphQL ``recordCount``."""
    conn.request("POST", "/graphql", COUNT_QUERY, {"content-type": "application/json"})
    response = conn.getresponse()
    body = response.read()
    if response.status != 200:
        return 0
    edges = json.loads(body).get("data", {}).get("projects", {}).get("edges", [])
    return sum(int(edge["node"]["recordCount"]) for edge in edges)


def trace_path(trace_id: str) -> str:
    """REST span search filtered by one trace id (Phoenix's ``GET /v1/projects/{p}/spans``)."""
    return f"/v1/projects/{PROJECT}/spans?trace_id={trace_id}&limit=1000"


def spans_in(payload: Any) -> int:
    return len(payload["data"])

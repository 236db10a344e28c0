"""`reach-otel topology`, run as a subprocess against a real collector holding known traffic: the
agents and handoffs tables fit 80 columns, name every edge with its counts, and `--json` prints
`/api/topology`'s body; an unreachable collector is one line on stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable

from test_topology_api import _send_known_traffic
from topology_helpers import App, Collector


def _run(*argv: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns), "REACH_OTEL_TZ": "UTC"}
    return subprocess.run(
        [sys.executable, "-m", "reach_otel.cli", "topology", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_tables_at_80_columns(collector: Collector, apps: Callable[..., App]) -> None:
    _send_known_traffic(collector, apps)
    done = _run("--url", collector.url, "--window", "1h")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, done.stdout
    assert lines[0] == "Agent topology, last 1h"
    text = done.stdout
    assert "Handoffs (source → target, mode)" in text
    for edge in ("Triage → Billing", "Billing → Triage", "Triage → Tech"):
        assert edge in text, text
    # Triage → Billing: 5 handoffs, 2 committed, 1 rejected, 1 failed, 1 unknown, p95 480ms.
    row = next(line for line in lines if "Triage → Billing" in line)
    assert row.split()[3:8] == ["5", "2", "1", "1", "1"] and "480ms" in row, row
    # An edge's mode sits under it, indented: it reads as the edge's, not as a wrapped line.
    modes = [line for line in lines if line.strip() == "delegate"]
    assert modes and all(line.startswith("  ") for line in modes), text
    agents = lines[: lines.index("Handoffs (source → target, mode)")]
    assert next(line for line in agents if line.startswith("Billing ")).split()[1:4] == ["4", "2", "200ms"]
    assert "unpriced" in next(line for line in agents if line.startswith("Tech "))
    wide = _run("--url", collector.url, columns=160)
    assert "inferred" in wide.stdout and "loops" in wide.stdout and "delegate" in wide.stdout


def test_json_and_a_clear_failure(collector: Collector, apps: Callable[..., App]) -> None:
    _send_known_traffic(collector, apps)
    done = _run("--url", collector.url, "--json", "--service", "other-app")
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body == collector.get("/api/topology", window="1h", service="other-app").json() | {
        "until": body["until"]
    }
    down = _run("--url", "http://127.0.0.1:9")
    assert down.returncode == 1 and down.stdout == ""
    assert down.stderr.startswith("reach-otel topology: ") and len(down.stderr.splitlines()) == 1
    bad = _run("--url", collector.url, "--window", "forever")
    assert bad.returncode == 1 and "window must be" in bad.stderr

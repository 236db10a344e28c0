"""The query commands read the query token from a file (``--token-file``), so it need not be on a
command line other local users can read; a file that holds no token is named in the error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from collector_process import CollectorProcess


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_"))}
    command = [sys.executable, "-m", "reach_otel", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)


def test_the_query_commands_read_the_token_from_a_file(tmp_path: Path) -> None:
    config = tmp_path / "reach.yaml"
    config.write_text("auth: {query_token: q-file-secret}\n")
    token, empty = tmp_path / "token", tmp_path / "empty"
    token.write_text("q-file-secret\n")
    empty.write_text("\n")
    with CollectorProcess(tmp_path / "traces.duckdb", "--config", str(config)) as collector:
        allowed = _cli("traces", "--url", collector.url, "--token-file", str(token), "--json")
        without = _cli("traces", "--url", collector.url)
        blank = _cli("traces", "--url", collector.url, "--token-file", str(empty))
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout) == {"traces": []}
    assert without.returncode == 1
    assert "wants a query token: set $REACH_QUERY_TOKEN or pass --token-file" in without.stderr
    assert blank.returncode == 2
    assert blank.stderr.strip() == f"reach-otel traces: --token-file {empty}: expected one token on one line"

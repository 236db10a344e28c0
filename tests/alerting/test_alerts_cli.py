"""`reach-otel alerts | alerts replay | alerts ack | oncall | agents` against a real collector, and
a bad alerting config failing at start with one line."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from alerting_fakes import T0, free_port
from alerting_live import NS, live_collector
from test_alert_store_data import history_body

from reach_collector import cli


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="reach-otel")
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


def test_commands_against_a_running_collector(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc: dict[str, Any] = {
        "schedules": {
            "primary": {
                "layers": [
                    {"name": "w", "start": "2026-01-01T00:00:00", "length": "1w", "members": ["alice", "bob"]}
                ]
            }
        }
    }
    with live_collector(tmp_path / "t.duckdb", doc, alert_loop=False) as c:
        assert c.post("/v1/traces", history_body()).status_code == 200
        assert c.post("/api/heartbeats", {"agent_id": "mesh-1"}).status_code == 202
        capsys.readouterr()
        assert run("alerts", "--url", c.url) == 0
        assert "no alerts" in capsys.readouterr().out
        since, until = str(int(T0 * NS)), "2026-01-05T08:20:00Z"
        assert (
            run("alerts", "replay", "--since", since, "--until", until, "--step", "1m", "--url", c.url) == 0
        )
        out = capsys.readouterr().out
        assert "21 evaluations, 6 transitions" in out and "billing" in out  # a table; columns may wrap
        assert run("alerts", "replay", "--since", since, "--until", until, "--url", c.url, "--json") == 0
        assert len(json.loads(capsys.readouterr().out)["transitions"]) == 6
        assert run("oncall", "--url", c.url) == 0
        assert "primary" in capsys.readouterr().out
        assert run("agents", "--url", c.url) == 0
        assert "mesh-1" in capsys.readouterr().out
        assert run("alerts", "ack", "0123456789abcdef", "--by", "alice", "--url", c.url) == 1
        assert "no firing alert with that fingerprint" in capsys.readouterr().err
        assert run("alerts", "replay", "--since", "soon", "--url", c.url) == 2
        assert capsys.readouterr().err.startswith("reach-otel alerts replay: --since: ")
    dead = f"http://127.0.0.1:{free_port()}"
    for argv in (("alerts",), ("oncall",), ("agents",), ("alerts", "deliveries")):
        assert run(*argv, "--url", dead) == 1
        assert capsys.readouterr().err.startswith(f"reach-otel {' '.join(argv)}: cannot reach the collector")


def test_bad_alerting_config_fails_at_start_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("alerting:\n  rules:\n    ReachSuccessRateLow: {for: soon}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "reach_collector", "--config", str(bad), "--db", ":memory:", "--port", "0"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert str(bad) in lines[0] and "alerting.rules.ReachSuccessRateLow.for" in lines[0]

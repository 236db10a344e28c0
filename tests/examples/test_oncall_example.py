"""The on-call example: its config loads and rotates as documented, and its receiver prints pages."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

from reach_collector.alerting import from_settings, oncall_report
from reach_collector.config import load

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "oncall"


def at(*args: int) -> float:
    return datetime(*args, tzinfo=timezone.utc).timestamp()


def test_config_loads_and_rotates() -> None:
    setup = from_settings(load(str(EXAMPLE / "reach.yaml")))
    assert setup.warnings == ()
    weekday = oncall_report(setup.schedules, at(2026, 12, 1, 12))["schedules"][0]
    assert (weekday["now"], weekday["next"]) == ("carol", "dave")  # the weekend override is next
    weekend = oncall_report(setup.schedules, at(2026, 12, 6, 12))["schedules"][0]
    assert weekend["now"] == "dave"
    assert weekend["next_handoff"] == "2026-12-06T23:00:00Z"  # midnight in Berlin


def test_receiver_prints_pages() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, str(EXAMPLE / "receiver.py"), "--port", str(port)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert "receiving pages on" in proc.stdout.readline()  # type: ignore[union-attr]
        body = {
            "version": "4",
            "status": "firing",
            "alerts": [
                {
                    "status": "firing",
                    "labels": {"alertname": "ReachSuccessRateLow", "severity": "P0", "agent": "BillingAgent"},
                }
            ],
        }
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/alice", json.dumps(body).encode(), {"content-type": "application/json"}
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                urllib.request.urlopen(request, timeout=5).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        line = proc.stdout.readline()  # type: ignore[union-attr]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert line.startswith("PAGE firing")
    assert "P0 ReachSuccessRateLow agent=BillingAgent → alice" in line

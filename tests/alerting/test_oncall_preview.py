"""`GET /api/oncall?at=ISO` and `reach-otel oncall --at` (§12): who is on call at a chosen instant
and why (the layer, or an override), on a real collector."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from alerting_fakes import T0, FakeClock
from alerting_live import Live, live_collector

from reach_collector import cli

DOC: dict[str, Any] = {
    "schedules": {
        "primary": {
            "layers": [
                {
                    "name": "weekly",
                    "start": "2026-01-05T09:00:00",
                    "length": "1w",
                    "members": ["alice", "bob", "carol"],
                },
                {
                    "name": "holiday",
                    "start": "2026-02-16T00:00:00",
                    "end": "2026-02-20T00:00:00",
                    "length": "1d",
                    "members": ["erin", "frank"],
                },
            ],
            "overrides": [{"user": "dave", "start": "2026-02-01T00:00:00", "end": "2026-02-03T00:00:00"}],
        }
    }
}


def _at(c: Live, at: str) -> dict[str, Any]:
    body = c.get("/api/oncall", at=at)
    (schedule,) = body["schedules"]
    return {"at": body["at"], **{k: schedule[k] for k in ("now", "reason", "next", "next_handoff")}}


def test_preview_says_who_and_why(tmp_path: Path) -> None:
    with live_collector(tmp_path / "t.duckdb", DOC, alert_loop=False, clock=FakeClock(T0)) as c:
        assert _at(c, "2026-01-06T00:00:00Z") == {
            "at": "2026-01-06T00:00:00Z",
            "now": "alice",
            "reason": "weekly",
            "next": "bob",
            "next_handoff": "2026-01-12T09:00:00Z",
        }
        # The hand-off instant itself, given with an offset, belongs to the next person.
        assert _at(c, "2026-01-12T17:00:00+08:00")["now"] == "bob"
        assert _at(c, "2026-02-02T12:00:00Z") == {
            "at": "2026-02-02T12:00:00Z",
            "now": "dave",
            "reason": "override",
            "next": "bob",  # week 4 of the weekly layer: members[4 mod 3]
            "next_handoff": "2026-02-03T00:00:00Z",
        }
        holiday = _at(c, "2026-02-17T10:00:00Z")
        assert (holiday["now"], holiday["reason"], holiday["next"]) == ("frank", "holiday", "erin")
        before = _at(c, "2025-12-01T00:00:00Z")
        assert (before["now"], before["reason"], before["next"]) == (None, None, "alice")
        # Without `at`: the collector's clock (the fake one, an hour before the first hand-off).
        now = c.get("/api/oncall")
        assert now["at"] == "2026-01-05T08:00:00Z" and now["schedules"][0]["now"] is None
        bad = httpx.get(c.url + "/api/oncall", params={"at": "next tuesday"}, timeout=10)
        assert bad.status_code == 400 and bad.json()["detail"].startswith("at: ")


def _cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="reach-otel")
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


def test_cli_oncall_at(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with live_collector(tmp_path / "t.duckdb", DOC, alert_loop=False, clock=FakeClock(T0)) as c:
        assert _cli("oncall", "--at", "2026-02-02T12:00:00Z", "--url", c.url, "--json") == 0
        body = json.loads(capsys.readouterr().out)
        assert (body["schedules"][0]["now"], body["schedules"][0]["reason"]) == ("dave", "override")
        assert _cli("oncall", "--at", "2026-01-20T12:00:00Z", "--url", c.url) == 0
        table = capsys.readouterr().out
        assert "carol" in table and "layer weekly" in table and "2026-01-20T12:00:00+00:00" in table
        assert _cli("oncall", "--at", "whenever", "--url", c.url) == 1
        assert "at: " in capsys.readouterr().err

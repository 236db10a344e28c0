"""What one replay may cost: at most ``alerting.replay_max_evaluations`` rule evaluations (steps ×
rules) per request, refused with a 400 naming the cap and the excess before any work; a step no
shorter than the evaluation interval; and the work stops when the client goes away (a real
collector process on loopback, watched through its CPU time and its log)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from alerting_fakes import MIN, T0, ScriptedData
from alerting_live import live_collector
from collector_process import CollectorProcess
from test_alerts_cli import run as run_cli

from reach_collector.alerting import load_alerting
from reach_collector.alerting.evaluation.build import build_rules
from reach_collector.alerting.evaluation.replay import MAX_EVALUATIONS, ReplayCancelled, replay, replay_steps
from reach_collector.alerting.evaluation.state import iso
from reach_collector.config import ConfigError, parse_duration


def _range(minutes: float) -> dict[str, Any]:
    return {"since": iso(T0), "until": iso(T0 + minutes * MIN)}


def test_a_replay_over_the_cap_is_refused_naming_the_cap_and_the_excess(tmp_path: Path) -> None:
    with live_collector(tmp_path / "t.duckdb", alert_loop=False) as c:
        week = c.post("/api/alerts/replay", {**_range(7 * 24 * 60), "step": "15s"})
        assert week.status_code == 400
        detail = week.json()["detail"]
        steps = 7 * 24 * 60 * 4 + 1
        assert f"{steps * 3} evaluations ({steps} steps × 3 rules)" in detail
        assert f"{steps * 3 - MAX_EVALUATIONS} beyond the cap" in detail
        assert f"at most {MAX_EVALUATIONS} per request (alerting.replay_max_evaluations)" in detail
        assert "use a step of at least" in detail
        advised = parse_duration(detail.split("use a step of at least ")[1].split(" ")[0])
        assert replay_steps(T0, T0 + 7 * 86400, advised) * 3 <= MAX_EVALUATIONS  # it fits


def test_the_cap_is_a_setting(tmp_path: Path) -> None:
    doc = {"alerting": {"replay_max_evaluations": 30}}
    with live_collector(tmp_path / "t.duckdb", doc, alert_loop=False) as c:
        assert c.post("/api/alerts/replay", _range(2)).status_code == 200  # 9 steps × 3 rules
        over = c.post("/api/alerts/replay", _range(10))  # 41 × 3
        assert over.status_code == 400
        detail = over.json()["detail"]
        assert "123 evaluations (41 steps × 3 rules), 93 beyond the cap: at most 30" in detail
        advised = detail.split("use a step of at least ")[1].split(" ")[0]
        fits = c.post("/api/alerts/replay", {**_range(10), "step": advised})
        assert fits.status_code == 200 and fits.json()["evaluations"] * 3 <= 30


@pytest.mark.parametrize("bad", [0, -1, 1.5, "many", True])
def test_a_bad_cap_is_a_config_error(bad: Any) -> None:
    with pytest.raises(ConfigError, match=r"alerting\.replay_max_evaluations"):
        load_alerting({"alerting": {"replay_max_evaluations": bad}})


def test_a_step_shorter_than_the_interval_is_400(tmp_path: Path) -> None:
    with live_collector(tmp_path / "t.duckdb", {"alerting": {"interval": "1m"}}, alert_loop=False) as c:
        for step in ("0s", "30s", "59.9s", 0, 59):
            response = c.post("/api/alerts/replay", {**_range(10), "step": step})
            assert response.status_code == 400, (step, response.text)
            assert "step: must be at least the evaluation interval (60s)" in response.json()["detail"]
        ok = c.post("/api/alerts/replay", {**_range(10), "step": "1m"})
        assert ok.status_code == 200 and ok.json()["evaluations"] == 11
        assert c.post("/api/alerts/replay", _range(10)).json()["evaluations"] == 11  # the default


def test_the_cli_shows_the_refusal_as_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with live_collector(tmp_path / "t.duckdb", alert_loop=False) as c:
        capsys.readouterr()
        assert run_cli("alerts", "replay", "--since", "1h", "--step", "0s", "--url", c.url) == 1
        err = capsys.readouterr().err
        assert err == (
            "reach-otel alerts replay: step: must be at least the evaluation interval (15s), got '0s'\n"
        )
        assert run_cli("alerts", "replay", "--since", "7d", "--url", c.url) == 1
        err = capsys.readouterr().err
        assert err.startswith("reach-otel alerts replay: replay would cost ") and err.count("\n") == 1
        assert "beyond the cap: at most 20000 per request (alerting.replay_max_evaluations)" in err


def test_replay_checks_cancelled_before_each_step() -> None:
    data = ScriptedData()
    rules = build_rules(load_alerting({}).alerting)
    with pytest.raises(ReplayCancelled) as stopped:
        replay(rules, data, T0, T0 + 60 * MIN, MIN, cancelled=lambda: len(data.stat_calls) >= 5)
    assert (stopped.value.done, stopped.value.steps) == (5, 61)  # one (cached) agent_stats a step
    assert len(data.stat_calls) == 5


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime + stime, in clock ticks of 1/100 s


def test_a_replay_stops_computing_when_its_client_goes_away(tmp_path: Path) -> None:
    config = tmp_path / "reach.yaml"
    config.write_text(yaml.safe_dump({"alerting": {"interval": "1s", "evaluate": False}}))
    collector = CollectorProcess(tmp_path / "t.duckdb", "--config", str(config)).start()
    try:
        assert collector.proc is not None
        pid = collector.proc.pid
        # 6 001 steps × 3 rules: under the cap, and half a minute of work or more on this machine.
        body = {"since": iso(T0), "until": iso(T0 + 6000), "step": "1s"}
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(collector.url + "/api/alerts/replay", json=body, timeout=1.5)  # then hangs up
        deadline = time.monotonic() + 10
        idle = False
        while time.monotonic() < deadline and not idle:
            before = _cpu_s(pid)
            time.sleep(0.5)
            idle = _cpu_s(pid) - before < 0.1
        assert idle, "the collector kept computing the replay after its client went away"
        assert httpx.get(collector.url + "/healthz", timeout=5).status_code == 200
    finally:
        printed = collector.stop()
    assert "replay stopped after " in printed and " of 6001 steps: its client went away" in printed


def test_replays_beyond_the_concurrency_cap_are_429_until_a_slot_frees(tmp_path: Path) -> None:
    config = tmp_path / "reach.yaml"
    doc = {"alerting": {"interval": "1s", "evaluate": False, "replay_concurrency": 1}}
    config.write_text(yaml.safe_dump(doc))
    collector = CollectorProcess(tmp_path / "t.duckdb", "--config", str(config)).start()
    try:
        long = {"since": iso(T0), "until": iso(T0 + 6000), "step": "1s"}  # half a minute of work or more
        with httpx.Client(base_url=collector.url, timeout=10) as client:
            with pytest.raises(httpx.ReadTimeout):  # holds the one slot for 1.5 s, then hangs up
                client.post("/api/alerts/replay", json=long, timeout=httpx.Timeout(10, read=1.5))
            busy = client.post("/api/alerts/replay", json=_range(2))
            assert busy.status_code == 429, busy.text
            assert busy.headers["retry-after"] == "5"
            assert busy.json()["detail"] == (
                "1 replay is already running (alerting.replay_concurrency); retry in 5s"
            )
            deadline, answer = time.monotonic() + 15, busy
            while answer.status_code == 429 and time.monotonic() < deadline:  # the hung-up one stops
                time.sleep(0.2)
                answer = client.post("/api/alerts/replay", json=_range(2))
            assert answer.status_code == 200, answer.text
    finally:
        collector.stop()


@pytest.mark.parametrize("bad", [0, 65, "two", True])
def test_a_bad_replay_concurrency_is_a_config_error(bad: Any) -> None:
    with pytest.raises(ConfigError, match=r"alerting\.replay_concurrency: expected a whole number of"):
        load_alerting({"alerting": {"replay_concurrency": bad}})

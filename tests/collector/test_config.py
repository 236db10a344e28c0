"""Config file (§10): defaults, every section, env overrides, and errors naming the key and reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from reach_collector.config import ConfigError, Settings, apply_env, load, parse_duration

FULL = """
server:   {host: 127.0.0.1, port: 4400, max_body_bytes: 1048576}
storage:  {db: ./data/t.duckdb, retention: 2d}
auth:     {ingest_token: in, query_token: q}
prices:
  gpt-4o-mini: {input: 0.15, output: 0.60}
alerting:
  interval: 15s
  registry: null
  thresholds: {billing: 2000}
  rules:
    ReachSuccessRateLow: {for: 5m, below: 0.5, window: 1m, min_calls: 5, keep_firing_for: 0s}
  repeat: 30m
time_zone: Asia/Shanghai
users: {alice: {webhook: "http://127.0.0.1:9/hook"}}
schedules: {}
escalation_policies: {}
routing: {P2: {action: deregister, page: false}}
"""


def test_defaults() -> None:
    s = load(None, env={})
    assert (s.host, s.port, s.grpc_port, s.db) == ("127.0.0.1", 4318, 4317, "./reach-data/traces.duckdb")
    assert s.max_body_bytes == 16 * 1024 * 1024
    assert s.retention_s == 7 * 86400
    assert not s.auth_enabled


def test_full_file(tmp_path: Path) -> None:
    path = tmp_path / "reach.yaml"
    path.write_text(FULL)
    s = load(path, env={})
    assert (s.port, s.max_body_bytes, s.db, s.retention_s) == (4400, 1048576, "./data/t.duckdb", 172800)
    assert (s.ingest_token, s.query_token) == ("in", "q")
    assert s.prices["gpt-4o-mini"] == {"input": 0.15, "output": 0.60}
    assert s.time_zone == "Asia/Shanghai"
    assert s.sections["alerting"]["thresholds"] == {"billing": 2000}
    assert s.sections["routing"]["P2"]["page"] is False


def test_env_overrides() -> None:
    s = apply_env(
        Settings(),
        {
            "REACH_COLLECTOR_DB": ":memory:",
            "REACH_COLLECTOR_PORT": "5000",
            "REACH_INGEST_TOKEN": "i",
            "REACH_QUERY_TOKEN": "q",
        },
    )
    assert (s.db, s.port, s.ingest_token, s.query_token) == (":memory:", 5000, "i", "q")
    with pytest.raises(ConfigError, match="REACH_COLLECTOR_PORT"):
        apply_env(Settings(), {"REACH_COLLECTOR_PORT": "http"})


@pytest.mark.parametrize(
    "text,key,reason",
    [
        ("server: {port: 99999}", "server.port", "between"),
        ("server: {port: '4318'}", "server.port", "integer"),
        ("server: {prot: 1}", "server.prot", "unknown key"),
        ("storage: {retention: forever}", "storage.retention", "duration"),
        ("auth: {ingest_token: 5}", "auth.ingest_token", "string"),
        ("prices: {m: {input: -1}}", "prices.m.input", "non-negative"),
        ("alerting: {rules: {X: {for: soon}}}", "alerting.rules.X.for", "duration"),
        ("time_zone: Mars/Olympus", "time_zone", "unknown time zone"),
        ("colour: blue", "colour", "unknown key"),
        ("server: [1, 2]", "server", "mapping"),
        ("- just a list", "(top level)", "mapping"),
        ("server: {port: [", "", "not valid YAML"),
    ],
)
def test_bad_file_names_key_and_reason(tmp_path: Path, text: str, key: str, reason: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load(path, env={})
    message = str(err.value)
    assert str(path) in message and key in message and reason in message


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load(tmp_path / "nope.yaml", env={})


def test_durations() -> None:
    assert [parse_duration(v) for v in ("30s", "5m", "1h", "7d", "1w", "250ms", 12)] == [
        30,
        300,
        3600,
        604800,
        604800,
        0.25,
        12,
    ]

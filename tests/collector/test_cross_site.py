"""The cross-site fence on a real collector: a scope without a token answers only to loopback Host
names (and server.allowed_hosts); requests that change state or start work refuse another
site's Origin and bodies that are not JSON; a non-loopback bind needs both tokens."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from collector_process import CollectorProcess, free_port

from reach_collector.api.fence import host_allowed, same_origin
from reach_collector.config import Settings, auth_line, check_bind

REBOUND = "rebind.attacker.example"
COLLECTOR = (sys.executable, "-m", "reach_collector", "--grpc-port", "0")


@pytest.fixture(scope="module")
def tokenless(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CollectorProcess]:
    with CollectorProcess(tmp_path_factory.mktemp("fence") / "t.duckdb") as collector:
        yield collector


def test_a_rebound_host_name_gets_nothing_from_a_tokenless_collector(tokenless: CollectorProcess) -> None:
    for path in ("/api/traces", "/metrics", "/api/alerts/deliveries", "/tempo/api/search", "/api/agents"):
        refused = httpx.get(tokenless.url + path, headers={"host": f"{REBOUND}:{tokenless.port}"}, timeout=10)
        assert refused.status_code == 403, (path, refused.status_code, refused.text)
        assert "allowed_hosts" in refused.json()["detail"]
        for host in (f"127.0.0.1:{tokenless.port}", f"localhost:{tokenless.port}", "localhost"):
            assert httpx.get(tokenless.url + path, headers={"host": host}, timeout=10).status_code == 200
    # Ingest is fenced too: a rebound page could otherwise write spans and heartbeats.
    beat = httpx.post(
        tokenless.url + "/api/heartbeats", json={"agent_id": "x"}, headers={"host": REBOUND}, timeout=10
    )
    assert beat.status_code == 403
    # /healthz and the console's shell hold no data and stay open.
    assert httpx.get(tokenless.url + "/healthz", headers={"host": REBOUND}, timeout=10).status_code == 200


def test_json_sent_as_a_simple_request_type_is_refused(tokenless: CollectorProcess) -> None:
    body = '{"agent_id": "plain-text-agent"}'
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; b=x"):
        beat = httpx.post(
            tokenless.url + "/api/heartbeats",
            content=body,
            headers={"content-type": content_type},
            timeout=10,
        )
        assert beat.status_code == 415, (content_type, beat.text)
        assert "application/json" in beat.json()["detail"]
    replay = httpx.post(
        tokenless.url + "/api/alerts/replay",
        content='{"since": "10m", "until": "0m"}',
        headers={"content-type": "text/plain"},
        timeout=10,
    )
    assert replay.status_code == 415
    agents = tokenless.get("/api/agents")["agents"]
    assert "plain-text-agent" not in {a["agent_id"] for a in agents}
    # The same bodies as JSON are served, and an empty POST (a curl of an ack URL) still works.
    ok = httpx.post(tokenless.url + "/api/heartbeats", json={"agent_id": "json-agent"}, timeout=10)
    assert ok.status_code == 202
    assert httpx.post(tokenless.url + "/api/alerts/" + "0" * 16 + "/ack", timeout=10).status_code == 404


def test_a_foreign_origin_may_not_change_state(tokenless: CollectorProcess) -> None:
    for origin in ("http://attacker.example", "null", f"http://127.0.0.1:{tokenless.port + 1}"):
        beat = httpx.post(
            tokenless.url + "/api/heartbeats",
            json={"agent_id": "csrf-agent", "status": "stopped"},
            headers={"origin": origin},
            timeout=10,
        )
        assert beat.status_code == 403, (origin, beat.text)
        assert "cross-site" in beat.json()["detail"]
    cross = httpx.post(
        tokenless.url + "/api/heartbeats",
        json={"agent_id": "csrf-agent"},
        headers={"sec-fetch-site": "cross-site"},
        timeout=10,
    )
    assert cross.status_code == 403
    same = httpx.post(
        tokenless.url + "/api/heartbeats",
        json={"agent_id": "same-origin-agent"},
        headers={"origin": tokenless.url},
        timeout=10,
    )
    assert same.status_code == 202
    assert "csrf-agent" not in {a["agent_id"] for a in tokenless.get("/api/agents")["agents"]}


def test_allowed_hosts_are_served(tmp_path: Path) -> None:
    config = tmp_path / "reach.yaml"
    config.write_text("server: {allowed_hosts: [collector.internal]}\n")
    with CollectorProcess(tmp_path / "t.duckdb", "--config", str(config)) as collector:
        named = httpx.get(collector.url + "/api/traces", headers={"host": "collector.internal:80"})
        assert named.status_code == 200
        assert httpx.get(collector.url + "/api/traces", headers={"host": REBOUND}).status_code == 403
        assert "served to Host loopback, collector.internal only" in _startup(collector)


def test_a_guarded_scope_serves_any_host_and_the_open_one_only_loopback(tmp_path: Path) -> None:
    env = {"REACH_INGEST_TOKEN": "ingest-secret"}
    with CollectorProcess(tmp_path / "t.duckdb", env=env) as collector:
        auth = {"authorization": "Bearer ingest-secret", "host": REBOUND}
        beat = httpx.post(collector.url + "/api/heartbeats", json={"agent_id": "a"}, headers=auth)
        assert beat.status_code == 202
        assert httpx.get(collector.url + "/api/traces", headers={"host": REBOUND}).status_code == 403
        line = _startup(collector)
    assert "auth: on (ingest token; query scope open" in line


def _startup(collector: CollectorProcess) -> str:
    out = collector.stop()
    return next(line for line in out.splitlines() if "collector auth:" in line)


def test_one_token_does_not_open_a_network_bind(tmp_path: Path) -> None:
    for env, open_scope in (({"REACH_INGEST_TOKEN": "i"}, "query"), ({"REACH_QUERY_TOKEN": "q"}, "ingest")):
        started = time.monotonic()
        result = subprocess.run(
            [*COLLECTOR, "--host", "0.0.0.0", "--port", str(free_port()), "--db", str(tmp_path / "t.duckdb")],
            env={**_base_env(), **env},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode != 0, result.stdout
        assert f"with the {open_scope} scope open (no auth.{open_scope}_token)" in result.stderr
        assert "Traceback" not in result.stderr
        assert time.monotonic() - started < 30


def _base_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_"))}


def test_bind_rule_and_startup_line() -> None:
    assert check_bind(Settings(host="0.0.0.0", ingest_token="a")) is not None
    assert check_bind(Settings(host="0.0.0.0", query_token="b")) is not None
    assert check_bind(Settings(host="0.0.0.0", ingest_token="a", query_token="b")) is None
    assert check_bind(Settings(host="0.0.0.0", ingest_token="a", insecure_bind=True)) is None
    assert check_bind(Settings(host="127.0.0.1", ingest_token="a")) is None
    assert auth_line(Settings(ingest_token="a", query_token="b")) == "on (ingest and query tokens)"
    assert auth_line(Settings()).startswith("off (no tokens; bound to 127.0.0.1;")


@pytest.mark.parametrize(
    ("host", "ok"),
    [
        ("127.0.0.1:4318", True),
        ("127.8.9.10", True),
        ("[::1]:4318", True),
        ("localhost", True),
        ("app.localhost:80", True),
        ("LOCALHOST:1", True),
        ("rebind.attacker.example", False),
        ("127.0.0.1.attacker.example", False),
        ("10.0.0.5:4318", False),
        ("collector.internal", True),
        ("", False),
    ],
)
def test_host_names(host: str, ok: bool) -> None:
    assert host_allowed(host, {"collector.internal"}) is ok


@pytest.mark.parametrize(
    ("origin", "host", "ok"),
    [
        ("http://127.0.0.1:4318", "127.0.0.1:4318", True),
        ("http://localhost", "localhost:80", True),
        ("http://127.0.0.1:4319", "127.0.0.1:4318", False),
        ("http://localhost:4318", "127.0.0.1:4318", False),
        ("https://127.0.0.1:4318", "127.0.0.1:4318", True),
        ("null", "127.0.0.1:4318", False),
        ("file://", "127.0.0.1:4318", False),
        ("http://127.0.0.1:99999", "127.0.0.1:4318", False),
    ],
)
def test_origins(origin: str, host: str, ok: bool) -> None:
    assert same_origin(origin, host) is ok

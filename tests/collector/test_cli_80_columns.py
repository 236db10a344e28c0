"""Every query command at 80 columns (SPEC §12), run as a subprocess against a real collector (its
own process, a config with a time zone, schedules, a page receiver that is down) holding real
traces, alerts, deliveries and heartbeats: no trace id, fingerprint or time is broken across lines,
times print in the configured zone with its offset, durations read `2.4s`/`15m`, `agents` names
each agent's service; errors are one line `reach-otel <command>: …` with no HTTP status."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
from collector_helpers import multi_agent_trace
from collector_process import CollectorProcess, free_port
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from reach_otel import semconv as sc

ZONE = "Asia/Shanghai"
LONG_AGENT = "payments-reconciliation-worker-eu"  # long names must fold, not push ids apart
NS = 1_000_000_000
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d")
# What is left of a time or an id that was cut: a date, a clock time, an offset, a hex run.
FRAGMENTS = re.compile(r"\d{4}-\d\d-\d\d|\d\d:\d\d:\d\d|[+-]\d\d:\d\d\b|\b[0-9a-f]{6,}\b")
ZONE_LABEL = re.compile(r"\([+-]\d\d:\d\d\)")  # "times in Asia/Shanghai (+08:00)"
STATUS = re.compile(r"\b[45]\d\d\b|HTTP")

CONFIG = f"""
time_zone: {ZONE}
alerting:
  interval: 1s
  rules:
    ReachSuccessRateLow: {{for: 0s, min_calls: 3}}
    ReachAgentHeartbeatLost: {{for: 0s, after: 2s}}
users:
  alice: {{webhook: "http://127.0.0.1:{{dead}}/page"}}
  bob: {{webhook: "http://127.0.0.1:{{dead}}/page"}}
schedules:
  primary:
    layers:
      - {{name: weekly, start: 2026-01-05T09:00:00, length: 1w, members: [alice, bob]}}
routing:
  P0: {{notify: {{users: [alice]}}}}
  P1: {{notify: {{users: [alice]}}}}
"""


def _attr(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def _failing_agent_spans(agent: str, n: int) -> dict[str, Any]:
    end = time.time_ns()
    spans = [
        {
            "traceId": os.urandom(16).hex(),
            "spanId": os.urandom(8).hex(),
            "name": f"invoke_agent {agent}",
            "kind": 1,
            "startTimeUnixNano": str(end - (i + 1) * 2_400_000_000),
            "endTimeUnixNano": str(end - i * 1_000_000),
            "attributes": [_attr(sc.GEN_AI_OPERATION_NAME, sc.OP_AGENT), _attr(sc.GEN_AI_AGENT_NAME, agent)],
            "status": {"code": 2},
        }
        for i in range(n)
    ]
    resource = {"attributes": [_attr("service.name", "reconciliation-svc")]}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": spans}]}]}


def _otlp_heartbeat(agent_id: str, service: str) -> dict[str, Any]:
    end = time.time_ns()
    beat = {
        "traceId": os.urandom(16).hex(),
        "spanId": os.urandom(8).hex(),
        "name": sc.HEARTBEAT_SPAN_NAME,
        "kind": 1,
        "startTimeUnixNano": str(end - 1_000_000),
        "endTimeUnixNano": str(end),
        "attributes": [_attr(sc.GEN_AI_AGENT_ID, agent_id)],
    }
    resource = {"attributes": [_attr("service.name", service)]}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": [beat]}]}]}


def _wait(probe: Any, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


class Populated:
    def __init__(self, url: str, trace_ids: list[str]) -> None:
        self.url, self.trace_ids = url, trace_ids

    def get(self, path: str, **params: Any) -> Any:
        response = httpx.get(self.url + path, params=params, timeout=10)
        response.raise_for_status()
        return response.json()


@pytest.fixture(scope="module")
def populated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Populated]:
    tmp = tmp_path_factory.mktemp("cli80")
    config = tmp / "reach.yaml"
    config.write_text(CONFIG.replace("{dead}", str(free_port())))
    with CollectorProcess(tmp / "t.duckdb", "--config", str(config)) as collector:
        endpoint = collector.url + "/v1/traces"
        ids = [
            multi_agent_trace(OTLPSpanExporter(endpoint=endpoint)),
            multi_agent_trace(OTLPSpanExporter(endpoint=endpoint), fail_billing=True, loop=True),
        ]
        failing = _failing_agent_spans(LONG_AGENT, 5)
        assert httpx.post(collector.url + "/v1/traces", json=failing, timeout=10).status_code == 200
        beat = _otlp_heartbeat("edge-7", "edge-gateway")  # a heartbeat as an OTLP span
        assert httpx.post(collector.url + "/v1/traces", json=beat, timeout=10).status_code == 200
        for beat in (
            {"agent_id": "TriageAgent"},  # service from its spans (support-app)
            {"agent_id": LONG_AGENT},  # from its spans (reconciliation-svc)
            {"agent_id": "mesh-router-7", "service": "mesh"},  # named by the heartbeat itself
            {"agent_id": "BillingAgent", "status": "stopped"},
        ):
            assert httpx.post(collector.url + "/api/heartbeats", json=beat, timeout=10).status_code == 202
        populated = Populated(collector.url, ids)
        # P0 for the failing agent, P2 for the heartbeats that stop; pages to a receiver that is down.
        _wait(lambda: len(populated.get("/api/alerts", state="firing")["alerts"]) >= 3)
        _wait(lambda: len(populated.get("/api/alerts/deliveries")["deliveries"]) >= 2)
        yield populated


def cli(url: str, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``reach-otel ARGV`` in its own process, on an 80-column terminal."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_"))}
    clean.update({"COLUMNS": "80", "LINES": "50", **(env or {})})
    args = [sys.executable, "-m", "reach_otel.cli", *argv]
    if url:
        args += ["--url", url]
    return subprocess.run(args, capture_output=True, text=True, timeout=60, env=clean)


def shown(url: str, *argv: str, env: dict[str, str] | None = None) -> str:
    done = cli(url, *argv, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout


def assert_whole(out: str, ids: list[str], stamps: list[str]) -> None:
    """Each id and time appears whole on one line; no line holds a piece of one; ≤ 80 columns."""
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80, out
    for needle in (*ids, *stamps):
        assert any(needle in line for line in lines), f"{needle} not whole in:\n{out}"
    for line in lines:
        rest = ZONE_LABEL.sub("", STAMP.sub("", line))
        for needle in ids:
            rest = rest.replace(needle, "")
        assert not FRAGMENTS.search(rest), f"a broken id or time in {line!r}:\n{out}"


def assert_near(out: str, before: str, api_time: str) -> None:
    """ "now" (a window's end, say) is printed whole after ``before``, in the zone, within seconds of
    the API's — time moves between the two calls."""
    (printed,) = re.findall(re.escape(before) + "(" + STAMP.pattern + ")", out)
    assert printed.endswith("+08:00")
    gap = datetime.fromisoformat(printed) - datetime.fromisoformat(api_time.replace("Z", "+00:00"))
    assert abs(gap.total_seconds()) < 10


def local(iso: str | None) -> str:
    assert iso
    stamp = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return stamp.astimezone(ZoneInfo(ZONE)).replace(microsecond=0).isoformat()


def test_traces_and_trace(populated: Populated) -> None:
    body = populated.get("/api/traces", limit=20)
    ids = [t["trace_id"] for t in body["traces"]]
    assert set(populated.trace_ids) <= set(ids) and len(ids) >= 7
    out = shown(populated.url, "traces")
    assert_whole(out, ids, [local(t["start_time"]) for t in body["traces"]])
    assert f"times in {ZONE} (+08:00)" in out
    assert "2.4s" in out  # a failing agent span's duration, in the one format

    trace_id = populated.trace_ids[1]
    trace = populated.get(f"/api/traces/{trace_id}")
    out = shown(populated.url, "trace", trace_id)
    start = min(s["start_time_unix_nano"] for s in trace["spans"])
    assert_whole(out, [trace_id], [datetime.fromtimestamp(start // NS, ZoneInfo(ZONE)).isoformat()])
    assert "billing.InvoiceError" in out and "handoff TriageAgent → BillingAgent" in out


def test_metrics_tables(populated: Populated) -> None:
    golden = populated.get("/api/metrics/golden", window="15m")
    out = shown(populated.url, "metrics", "--window", "15m")
    assert_whole(out, [], [])
    assert_near(out, "until ", golden["until"])
    assert "last 15m" in out and LONG_AGENT[:12] in out and "2.4s" in out
    agents = populated.get("/api/metrics/agents", window="1h")
    out = shown(populated.url, "metrics", "--agents", "--window", "1h")
    assert_whole(out, [], [])
    assert_near(out, "until ", agents["until"])
    assert "last 1h" in out and "TriageAgent" in out


def test_alert_tables(populated: Populated) -> None:
    alerts = populated.get("/api/alerts")["alerts"]
    out = shown(populated.url, "alerts")
    fired = [local(a["fired_at"]) for a in alerts if a["state"] == "firing"]
    # ids: the fingerprints, and the first example trace of each firing alert's cause (§17)
    causes = [
        a["annotations"]["cause_traces"].split(",")[0] for a in alerts if a["annotations"].get("cause_traces")
    ]
    assert_whole(out, [a["fingerprint"] for a in alerts] + causes, fired)
    assert "ReachSuccessRateLow" in out and "ReachAgentHeartbeatLost" in out

    deliveries = populated.get("/api/alerts/deliveries")["deliveries"]
    out = shown(populated.url, "alerts", "deliveries")
    assert_whole(out, [], [local(d["time"]) for d in deliveries])
    assert "connection" in out  # why the page was not delivered

    now = int(time.time())
    window = ("--since", str((now - 600) * NS), "--until", str(now * NS))  # the same grid twice
    transitions = json.loads(shown(populated.url, "alerts", "replay", *window, "--json"))["transitions"]
    assert transitions
    out = shown(populated.url, "alerts", "replay", *window)
    assert_whole(out, [], [local(t["time"]) for t in transitions])
    assert "pending → firing" in out


def test_oncall_and_agents(populated: Populated) -> None:
    oncall = populated.get("/api/oncall")
    assert oncall["time_zone"] == ZONE
    out = shown(populated.url, "oncall")
    assert_whole(out, [], [local(oncall["schedules"][0]["next_handoff"])])
    assert_near(out, "On call now (", oncall["at"])
    at = shown(populated.url, "oncall", "--at", "2026-01-12T02:00:00Z")
    assert "2026-01-12T10:00:00+08:00" in at and "bob" in at  # the second week, in the zone

    agents = populated.get("/api/agents")["agents"]
    services = {a["agent_id"]: a["service"] for a in agents}
    assert services["TriageAgent"] == "support-app"
    assert services[LONG_AGENT] == "reconciliation-svc"
    assert services["mesh-router-7"] == "mesh"
    assert services["edge-7"] == "edge-gateway"  # from its OTLP heartbeat span's resource
    out = shown(populated.url, "agents")
    assert_whole(out, [], [local(a["last_heartbeat"]) for a in agents])
    rows = {line.split()[0]: line for line in out.splitlines() if line.split()}
    assert "support-app" in rows["TriageAgent"] and "mesh" in rows["mesh-router-7"]
    assert "stopped" in rows["BillingAgent"]


def test_zone_flag_and_environment(populated: Populated) -> None:
    agents = populated.get("/api/agents")["agents"]
    utc = shown(populated.url, "agents", "--tz", "UTC")
    beat = datetime.fromisoformat(agents[0]["last_heartbeat"].replace("Z", "+00:00")).replace(microsecond=0)
    assert beat.isoformat() in utc and "times in UTC (+00:00)" in utc
    berlin = shown(populated.url, "agents", env={"REACH_OTEL_TZ": "Europe/Berlin"})
    assert beat.astimezone(ZoneInfo("Europe/Berlin")).isoformat() in berlin


def one_error(done: subprocess.CompletedProcess[str], command: str, code: int = 1) -> str:
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"reach-otel {command}: "), lines[0]
    assert not STATUS.search(lines[0]), lines[0]
    return lines[0]


def test_errors_have_one_prefix_and_no_status_codes(populated: Populated) -> None:
    url, down = populated.url, f"http://127.0.0.1:{free_port()}"
    unknown = "ab" * 16
    assert f"trace {unknown} not found" in one_error(cli(url, "trace", unknown), "trace")
    assert "malformed trace id" in one_error(cli(url, "trace", "nothex"), "trace", 2)
    assert "connection refused" in one_error(cli(down, "traces"), "traces")
    assert "not a collector URL" in one_error(cli("", "traces", "--url", "nowhere"), "traces", 2)
    assert "not a collector URL" in one_error(cli("", "agents", env={"REACH_OTEL_URL": "x:y"}), "agents", 2)
    assert "since" in one_error(cli(url, "traces", "--since", "someday"), "traces")
    assert "window" in one_error(cli(url, "metrics", "--window", "soon"), "metrics")
    assert "no firing alert" in one_error(cli(url, "alerts", "ack", "0" * 16), "alerts ack")
    one_error(cli(url, "alerts", "replay", "--since", "whenever"), "alerts replay", 2)
    assert "at: " in one_error(cli(url, "oncall", "--at", "whenever"), "oncall")
    assert "unknown time zone" in one_error(cli(url, "agents", "--tz", "Mars/Base"), "agents", 2)
    assert "connection refused" in one_error(cli(down, "alerts", "deliveries"), "alerts deliveries")
    assert "connection refused" in one_error(cli(down, "metrics", "--agents"), "metrics")


def test_a_token_the_collector_wants(tmp_path: Path) -> None:
    with CollectorProcess(tmp_path / "t.duckdb", env={"REACH_QUERY_TOKEN": "q-secret"}) as collector:
        line = one_error(cli(collector.url, "agents"), "agents")
        assert "wants a query token" in line
        line = one_error(cli(collector.url, "agents", "--token", "wrong"), "agents")
        assert "refused the query token" in line
        assert "no heartbeats" in shown(collector.url, "agents", "--token", "q-secret")
        assert json.loads(shown(collector.url, "agents", "--token", "q-secret", "--json")) == {"agents": []}

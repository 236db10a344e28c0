"""The app's side when the collector is down (SPEC §12): a quiet stderr, a true ``dropped_spans()``, an
exit bounded by the shutdown timeout and quick on a refused connection, a schemeless endpoint turned
down in one line, and a default queue that takes a 10 000-span burst without losing a span.

Every case is a real app in its own process exporting OTLP/HTTP over loopback.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
from collector_process import CollectorProcess
from otlp_sink import OtlpSink

from reach_otel._export import RateLimitedWarning
from reach_otel.config import load_settings

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from outage import closed_port, run_burst, spans_stored

# 3 000 spans: past the 512-span batch, so the exporter tries (and retries) while the app still runs.
APP = textwrap.dedent(
    """
    import atexit, json, logging, sys, time
    import reach_otel

    if sys.argv[3] == "info":
        logging.basicConfig(level=logging.INFO)
    atexit.register(lambda: print(json.dumps({"dropped": reach_otel.dropped_spans()}), flush=True))
    reach_otel.init(service_name="down-app", endpoint=sys.argv[1])

    @reach_otel.tool(name="lookup")
    def lookup(i):
        return i

    for i in range(int(sys.argv[2])):
        lookup(i)
    time.sleep(1.5)  # long enough for the exporter's first attempts and retries
    print(json.dumps({"done_at": time.time()}), flush=True)
    """
)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_OTEL_"))}
    env.update(extra)
    return env


def run(endpoint: str, spans: int = 3000, logging_mode: str = "default", **env: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", APP, endpoint, str(spans), logging_mode],
        capture_output=True,
        text=True,
        env=_env(**env),
        timeout=60,
    )
    ended = time.time()
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    result: dict[str, object] = {}
    for line in lines:
        result.update(json.loads(line))
    result["exit_s"] = ended - float(result["done_at"])  # type: ignore[arg-type]
    result["stderr"] = [line for line in out.stderr.splitlines() if line.strip()]
    return result


def assert_quiet(stderr: list[str]) -> None:
    """At most one WARNING, and it is reach_otel's own: no SDK retry lines, no tracebacks.

    (With ``logging.basicConfig(level=INFO)`` lines carry their level; INFO ones are the app's choice.)
    """
    warnings = [line for line in stderr if not line.startswith("INFO:")]
    assert len(warnings) <= 1, stderr
    for line in warnings:
        assert "reach_otel:" in line and "Traceback" not in line, stderr
    joined = "\n".join(stderr)
    assert "Transient error" not in joined and "Failed to export" not in joined, stderr


@pytest.mark.parametrize("logging_mode", ["default", "info"])
def test_refused_connection_quiet_counted_and_no_exit_stall(logging_mode: str) -> None:
    result = run(f"http://127.0.0.1:{closed_port()}", logging_mode=logging_mode)
    assert result["dropped"] == 3000  # every span made, none delivered
    assert_quiet(result["stderr"])  # type: ignore[arg-type]
    if logging_mode == "default":
        assert len(result["stderr"]) == 1  # type: ignore[arg-type]
        assert "connection refused" in result["stderr"][0]  # type: ignore[index]
    # The shutdown timeout is 5 s; a refused connection is not waited for.
    assert result["exit_s"] < 2.0, result


def test_collector_that_accepts_but_never_answers_waits_the_timeout_at_most() -> None:
    with OtlpSink(mode="hang") as sink:
        result = run(sink.url, REACH_OTEL_SHUTDOWN_TIMEOUT="2")
    assert result["dropped"] == 3000
    assert_quiet(result["stderr"])  # type: ignore[arg-type]
    assert result["exit_s"] <= 2.0 + 1.0, result  # the timeout, plus the interpreter's own exit


def test_failed_exports_are_counted_while_the_app_runs() -> None:
    # A 1 s export deadline: the first batch's retries are over well before the app ends.
    code = textwrap.dedent(
        """
        import sys, time, reach_otel
        reach_otel.init(endpoint=sys.argv[1])
        for i in range(600):
            reach_otel.tool(name="t")(lambda: i)()
        deadline = time.monotonic() + 10
        while reach_otel.dropped_spans() < 512 and time.monotonic() < deadline:
            time.sleep(0.05)
        print(reach_otel.dropped_spans(), flush=True)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code, f"http://127.0.0.1:{closed_port()}"],
        capture_output=True,
        text=True,
        env=_env(OTEL_EXPORTER_OTLP_TRACES_TIMEOUT="1"),
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["512"]  # the first batch failed; the other 88 still wait in the queue
    assert_quiet([line for line in out.stderr.splitlines() if line.strip()])


def test_endpoint_without_a_scheme_is_rejected_in_one_line() -> None:
    code = textwrap.dedent(
        """
        import reach_otel
        reach_otel.init(service_name="schemeless")
        print(reach_otel.get_handler().settings.endpoint)
        print(reach_otel.lifecycle._state.processor.exporter.inner._endpoint)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=_env(OTEL_EXPORTER_OTLP_ENDPOINT="127.0.0.1:4318"),
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["http://127.0.0.1:4318/v1/traces"] * 2
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "OTEL_EXPORTER_OTLP_ENDPOINT='127.0.0.1:4318'" in lines[0]
    assert "using the default http://127.0.0.1:4318/v1/traces" in lines[0]


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"}, "http://127.0.0.1:4318/v1/traces"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://collector:21"}, "http://127.0.0.1:4318/v1/traces"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:port"}, "http://127.0.0.1:4318/v1/traces"),
        (
            {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "collector:4318/v1/traces"},
            "http://127.0.0.1:4318/v1/traces",
        ),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector.example:4318/"},
            "https://collector.example:4318/v1/traces",
        ),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:1/custom"}, "http://c:1/custom"),
        (
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "c:4317"},
            "http://127.0.0.1:4317",
        ),
        (
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"},
            "http://c:4317",
        ),
    ],
)
def test_endpoint_validation(env: dict[str, str], expected: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="reach_otel"):
        assert load_settings(env=env).endpoint == expected
    rejected = expected.startswith("http://127.0.0.1:")
    assert len(caplog.records) == (1 if rejected else 0), caplog.text


def test_endpoint_credentials_are_not_echoed(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="reach_otel"):
        load_settings(endpoint="user:s3cret-token@collector:4318")
    assert "s3cret-token" not in caplog.text
    assert "collector:4318" in caplog.text


def test_at_most_one_warning_a_minute(caplog: pytest.LogCaptureFixture) -> None:
    now = [1000.0]
    warn = RateLimitedWarning(interval=60, clock=lambda: now[0])
    with caplog.at_level(logging.DEBUG, logger="reach_otel"):
        warn("first %d", 1)
        now[0] += 59
        warn("second %d", 2)
        now[0] += 1
        warn("third %d", 3)
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", "first 1"),
        ("DEBUG", "second 2"),
        ("WARNING", "third 3"),
    ]


def test_a_burst_of_10000_spans_loses_none_with_the_collector_up() -> None:
    with tempfile.TemporaryDirectory() as tmp, CollectorProcess(Path(tmp) / "burst.duckdb") as collector:
        result = run_burst(collector.url, 10_000)
        deadline = time.monotonic() + 10
        while spans_stored(collector.url) < 10_000 and time.monotonic() < deadline:
            time.sleep(0.1)
        stored = spans_stored(collector.url)
    assert result["dropped"] == 0, result
    assert stored == 10_000
    assert result["stderr"] == []

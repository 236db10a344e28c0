"""`reach-otel run` and `opentelemetry-instrument` apply every available instrumentor; the disabled
list is honoured; bad invocations fail with a clear message."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

PROBE = (
    "import openai.resources.chat.completions.completions as c, httpx, requests.sessions as r\n"
    "print(type(c.Completions.create).__name__, type(httpx.Client.send).__name__,"
    " type(r.Session.send).__name__)\n"
)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_OTEL_"))}
    env.update(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9", REACH_OTEL_SHUTDOWN_TIMEOUT="1", **extra)
    return env


def reach_run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reach_otel", "run", *args],
        capture_output=True,
        text=True,
        env=clean_env(**env),
        timeout=60,
    )


def test_reach_otel_run_applies_the_instrumentors() -> None:
    out = reach_run("--", sys.executable, "-c", PROBE)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["BoundFunctionWrapper"] * 3


def test_disabled_instrumentations_are_skipped() -> None:
    out = reach_run(
        "--", sys.executable, "-c", PROBE, OTEL_PYTHON_DISABLED_INSTRUMENTATIONS="openai,requests"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["function", "BoundFunctionWrapper", "function"]


def test_exit_code_of_the_program_is_kept() -> None:
    out = reach_run("--", sys.executable, "-c", "import sys; sys.exit(7)")
    assert out.returncode == 7


def test_bad_invocations() -> None:
    missing = reach_run("--", "no-such-program-here")
    assert missing.returncode == 127
    assert "command not found: no-such-program-here" in missing.stderr
    empty = reach_run()
    assert empty.returncode == 2
    assert "give the program to run" in empty.stderr


def test_opentelemetry_instrument_picks_up_the_entry_points() -> None:
    script = shutil.which("opentelemetry-instrument")
    if script is None:  # the console script lives next to this interpreter
        script = os.path.join(os.path.dirname(sys.executable), "opentelemetry-instrument")
    out = subprocess.run(
        [script, sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        env=clean_env(OTEL_TRACES_EXPORTER="none", OTEL_METRICS_EXPORTER="none", OTEL_LOGS_EXPORTER="none"),
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["BoundFunctionWrapper"] * 3

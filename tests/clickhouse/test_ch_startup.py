"""Starting a collector on ClickHouse: an unreachable server is a one-line error and a non-zero
exit within 30 s; a refused password is one line too; the startup line says where the data lives
— and no output ever holds the password, from the URL or from REACH_CLICKHOUSE_PASSWORD."""

from __future__ import annotations

import subprocess
import sys
import time

from ch_collectors import CollectorProcess, post
from ch_server import PASSWORD_USER, TEST_PASSWORD, ClickHouseServer
from ch_spans import make_request
from collector_process import free_port

from reach_collector.store.clickhouse.schema import SCHEMA_VERSION


def _run(db: str, env: dict[str, str] | None = None) -> tuple[int, str, float]:
    process = CollectorProcess(db, env=env)
    started = time.monotonic()
    done = subprocess.run(process.args, env=process.env, capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


def test_unreachable_server_is_one_line_and_exits(ch_database: str) -> None:
    db = f"clickhouse://{PASSWORD_USER}@127.0.0.1:{free_port()}/{ch_database}"
    code, output, seconds = _run(db, {"REACH_CLICKHOUSE_PASSWORD": TEST_PASSWORD})
    assert code != 0
    assert seconds < 30
    lines = output.strip().splitlines()
    assert len(lines) == 1, output
    assert "cannot open the trace store" in lines[0] and "127.0.0.1" in lines[0]
    assert TEST_PASSWORD not in output


def test_refused_password_is_one_line(clickhouse: ClickHouseServer, ch_database: str) -> None:
    wrong = "wrong-" + TEST_PASSWORD[::-1]
    db = f"clickhouse://{PASSWORD_USER}:{wrong}@127.0.0.1:{clickhouse.tcp_port}/{ch_database}"
    code, output, seconds = _run(db)
    assert code != 0 and seconds < 30
    assert len(output.strip().splitlines()) == 1, output
    assert wrong not in output and TEST_PASSWORD not in output


def test_bad_url_is_a_config_error(ch_database: str) -> None:
    code, output, _ = _run(f"clickhouse://u:{TEST_PASSWORD}@127.0.0.1:9000/")
    assert code != 0 and "no database" in output and TEST_PASSWORD not in output


def test_startup_line_never_shows_the_password(clickhouse: ClickHouseServer, ch_database: str) -> None:
    for db, env in (
        (clickhouse.url(ch_database, user=PASSWORD_USER), {"REACH_CLICKHOUSE_PASSWORD": TEST_PASSWORD}),
        (f"clickhouse://{PASSWORD_USER}:{TEST_PASSWORD}@127.0.0.1:{clickhouse.tcp_port}/{ch_database}", {}),
    ):
        collector = CollectorProcess(db, env=env).start()
        try:
            body, _ = make_request(time.time_ns(), traces=2)
            assert post(collector.url, body).status_code == 200
        finally:
            output = collector.stop()
        assert TEST_PASSWORD not in output
        expected = f"clickhouse://{PASSWORD_USER}@127.0.0.1:{clickhouse.tcp_port}/{ch_database} (ClickHouse "
        assert f"reach-otel collector data: {expected}" in output, output
        assert f", schema {SCHEMA_VERSION})" in output, output


def test_help_names_clickhouse() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "reach_collector", "--help"], capture_output=True, text=True, timeout=60
    )
    assert "clickhouse://" in done.stdout

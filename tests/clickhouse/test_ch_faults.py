"""Faults: ClickHouse stopped under a running collector answers 503 with Retry-After (ingest and
reads), never a 500; started again, ingest works with no collector restart and every span
acknowledged before the outage is there. kill -9 of a collector right after its
acknowledgements loses none of them."""

from __future__ import annotations

import time

import httpx
import pytest
from ch_collectors import CollectorProcess, post, start_in_process
from ch_server import ClickHouseServer
from ch_spans import make_request

from reach_collector.store.clickhouse import ClickHouseStore


def _stored(server: ClickHouseServer, database: str, trace_ids: list[str]) -> int:
    rows = server.execute(
        f"SELECT count() FROM {database}.spans WHERE trace_id IN %(ids)s", {"ids": tuple(trace_ids)}
    )
    return int(rows[0][0])


def test_outage_503_then_recovery_without_restart(clickhouse_own: ClickHouseServer, ch_database: str) -> None:
    db = clickhouse_own.url(ch_database)
    collector = start_in_process(ClickHouseStore(db), db)
    try:
        before, before_ids = make_request(time.time_ns(), traces=6, seed=31)
        response = collector.post(before)
        assert response.status_code == 200, response.text
        acked = int(collector.get(f"/api/traces/{before_ids[0]}").json()["span_count"])
        assert acked > 0

        clickhouse_own.kill()
        during, during_ids = make_request(time.time_ns(), traces=6, seed=32)
        response = collector.post(during)
        assert response.status_code == 503, response.text
        assert int(response.headers["Retry-After"]) > 0
        for path in (f"/api/traces/{before_ids[0]}", "/api/traces"):
            read = collector.get(path)
            assert read.status_code == 503, (path, read.text)
            assert int(read.headers["Retry-After"]) > 0
            assert "unavailable" in read.json()["detail"]
        assert collector.get("/healthz").status_code == 503

        clickhouse_own.start()
        deadline = time.monotonic() + 30
        while (response := collector.post(during)).status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.2)  # the exporter's retry, as Retry-After says
        assert response.status_code == 200, response.text
        assert collector.get("/healthz").status_code == 200
        assert collector.get(f"/api/traces/{before_ids[0]}").json()["span_count"] == acked
        found = {t["trace_id"] for t in collector.get("/api/traces", limit="100").json()["traces"]}
        assert set(before_ids) | set(during_ids) <= found
        assert _stored(clickhouse_own, ch_database, before_ids) == _count_spans(before)
    finally:
        collector.close()


def _count_spans(body: bytes) -> int:
    from reach_collector.ingest.decode import PROTOBUF, parse
    from reach_collector.ingest.rows import flatten

    return flatten(parse(body, PROTOBUF)).accepted


def test_kill_9_after_acks_loses_nothing(clickhouse: ClickHouseServer, ch_database: str) -> None:
    collector = CollectorProcess(clickhouse.url(ch_database)).start()
    acked: list[str] = []
    spans = 0
    try:
        for seed in range(40, 52):
            body, ids = make_request(time.time_ns(), traces=8, seed=seed)
            response = post(collector.url, body)
            assert response.status_code == 200, response.text
            acked += ids
            spans += _count_spans(body)
    finally:
        collector.kill()  # SIGKILL right after the last acknowledgement
    assert _stored(clickhouse, ch_database, acked) == spans
    # A new collector on the same database serves them.
    again = CollectorProcess(clickhouse.url(ch_database)).start()
    try:
        body = httpx.get(f"{again.url}/api/traces/{acked[-1]}", timeout=10).json()
        assert body["span_count"] > 0
    finally:
        again.stop()


def test_a_query_clickhouse_refuses_is_a_500_that_says_so(
    clickhouse: ClickHouseServer, ch_database: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Not an outage: the server refuses the query for good (here the trace lookup was dropped
    under the collector). The answer is a JSON 500 naming what ClickHouse said — not a bare
    "Internal Server Error" — and one log line; reads that do not need the table still answer."""
    db = clickhouse.url(ch_database)
    collector = start_in_process(ClickHouseStore(db), db)
    try:
        body, ids = make_request(time.time_ns(), traces=3, seed=5)
        assert collector.post(body).status_code == 200
        clickhouse.execute(f"DROP TABLE {ch_database}.traces_mv")
        clickhouse.execute(f"DROP TABLE {ch_database}.traces")
        with caplog.at_level("ERROR", logger="reach_collector"):
            for path in ("/api/traces", f"/api/traces/{ids[0]}"):
                response = collector.get(path)
                assert response.status_code == 500, (path, response.text)
                detail = response.json()["detail"]
                assert "refused the query" in detail and "traces" in detail, detail
        assert [r.getMessage() for r in caplog.records if "refused the query" in r.getMessage()]
        assert collector.get("/api/metrics/golden", window="5m").status_code == 200
    finally:
        collector.close()

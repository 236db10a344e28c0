"""Many exporters posting at once to a collector on a real ClickHouse 18.16 (two commits at once,
group commits): every request is acknowledged, each acknowledged request's traces are in
ClickHouse the moment its 200 arrives, whole, and nothing is stored twice."""

from __future__ import annotations

import threading
import time
from collections import Counter

import httpx
from ch_collectors import PROTOBUF, start_in_process
from ch_server import ClickHouseServer
from ch_spans import make_request

from reach_collector.ingest.decode import parse
from reach_collector.ingest.rows import flatten
from reach_collector.store.clickhouse import ClickHouseStore

EXPORTERS = 12
REQUESTS = 4


def test_every_acknowledged_request_is_stored_at_once_and_once(
    clickhouse: ClickHouseServer, ch_database: str
) -> None:
    db = clickhouse.url(ch_database)
    collector = start_in_process(ClickHouseStore(db), db)
    now = time.time_ns()
    bodies = [
        [make_request(now, traces=60, seed=1000 * e + r) for r in range(REQUESTS)] for e in range(EXPORTERS)
    ]
    expected: Counter[str] = Counter()
    for share in bodies:
        for body, _ in share:
            expected.update(
                flatten(parse(body, "application/x-protobuf")).table.column("trace_id").to_pylist()
            )
    missing: list[str] = []
    statuses: Counter[int] = Counter()
    lock = threading.Lock()
    start = threading.Barrier(EXPORTERS)

    errors: list[BaseException] = []

    def exporter(share: list[tuple[bytes, list[str]]]) -> None:
        try:
            _export(share)
        except BaseException as exc:  # seen by the test, not lost in the thread
            errors.append(exc)

    def _export(share: list[tuple[bytes, list[str]]]) -> None:
        checker = clickhouse.client(ch_database)
        with httpx.Client(timeout=60) as http:
            start.wait()
            for body, ids in share:
                r = http.post(collector.url + "/v1/traces", content=body, headers={"content-type": PROTOBUF})
                found = set()
                if r.status_code == 200:  # acknowledged: in ClickHouse now, whatever else is in flight
                    rows = checker.execute(
                        "SELECT DISTINCT trace_id FROM spans WHERE trace_id IN %(ids)s", {"ids": tuple(ids)}
                    )
                    found = {t for (t,) in rows}
                with lock:
                    statuses[r.status_code] += 1
                    missing.extend(t for t in ids if t not in found)
        checker.disconnect()

    threads = [threading.Thread(target=exporter, args=(share,)) for share in bodies]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert errors == []
        assert statuses == {200: EXPORTERS * REQUESTS}
        assert missing == []
        stored = dict(
            clickhouse.execute(f"SELECT trace_id, count() FROM {ch_database}.spans GROUP BY trace_id")
        )
        assert stored == dict(expected)  # every span once
        writer = collector.app.state.writer
        assert writer.concurrency == 2
        assert writer.stats.batches_committed < EXPORTERS * REQUESTS  # requests shared commits
        assert writer.stats.spans_written == sum(expected.values())
        for tid in list(expected)[:: len(expected) // 10]:
            assert collector.get(f"/api/traces/{tid}").json()["span_count"] == expected[tid]
    finally:
        collector.close()

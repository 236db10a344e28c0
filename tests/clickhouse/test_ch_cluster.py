"""A cluster collector (``?cluster=NAME``) on two shards on loopback: the schema is created on
each shard (local tables, Distributed ones over them, no ON CLUSTER), the spans land on both
shards by trace id, and every trace comes back whole — through either shard."""

from __future__ import annotations

import time
from collections import Counter

from ch_collectors import start_in_process
from ch_server import CLUSTER, ClickHouseServer
from ch_spans import make_request

from reach_collector.ingest.decode import PROTOBUF, parse
from reach_collector.ingest.rows import flatten
from reach_collector.store.clickhouse import ClickHouseStore


def test_spans_land_on_both_shards_and_come_back_whole(
    clickhouse_cluster: list[ClickHouseServer], ch_database: str
) -> None:
    first, second = clickhouse_cluster
    db = first.url(ch_database, cluster=CLUSTER)
    collector = start_in_process(ClickHouseStore(db), db)
    other = None
    try:
        for server in clickhouse_cluster:
            engines = dict(
                server.execute(f"SELECT name, engine FROM system.tables WHERE database = '{ch_database}'")
            )
            assert engines["spans"] == "Distributed" and engines["spans_local"] == "MergeTree"
            assert engines["traces_local_mv"] == "MaterializedView"
        body, ids = make_request(time.time_ns(), traces=24, seed=71)
        per_trace = Counter(flatten(parse(body, PROTOBUF)).table.column("trace_id").to_pylist())
        assert collector.post(body).status_code == 200
        # Acknowledged means on the shards (insert_distributed_sync): counted there right away.
        counts = [
            int(s.execute(f"SELECT count() FROM {ch_database}.spans_local")[0][0]) for s in clickhouse_cluster
        ]
        assert all(c > 0 for c in counts), counts
        assert sum(counts) == sum(per_trace.values())
        for server in clickhouse_cluster:  # each trace lives on one shard only
            local = dict(
                server.execute(f"SELECT trace_id, count() FROM {ch_database}.spans_local GROUP BY trace_id")
            )
            assert all(local[t] == per_trace[t] for t in local)
        other = start_in_process(ClickHouseStore(second.url(ch_database, cluster=CLUSTER)), db)
        for reader in (collector, other):
            for tid in ids:
                trace = reader.get(f"/api/traces/{tid}").json()
                assert trace["span_count"] == per_trace[tid], tid
            for since in ({}, {"since": "30m"}):
                found = reader.get("/api/traces", limit="100", **since).json()["traces"]
                assert {t["trace_id"]: t["span_count"] for t in found} == dict(per_trace)
            attr = reader.get("/api/traces", **{"attr.app.tier": "gold", "limit": "100"}).json()["traces"]
            assert len(attr) == len([t for t in range(24) if t % 2 == 0])
    finally:
        collector.close()
        if other is not None:
            other.close()

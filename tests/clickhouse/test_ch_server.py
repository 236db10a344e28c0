"""The fixture itself: real servers answer, the cluster's shards know each other, a restart in
place keeps the data, and the password user needs its password."""

from __future__ import annotations

import pytest
from ch_server import CLUSTER, PASSWORD_USER, TEST_PASSWORD, ClickHouseServer


def test_one_node_answers(clickhouse: ClickHouseServer) -> None:
    assert clickhouse.ping()
    ((version,),) = clickhouse.execute("SELECT version()")
    assert version.split(".")[0].isdigit()
    ((zone,),) = clickhouse.execute("SELECT timezone()")
    assert zone in ("UTC", "Etc/UTC")


def test_cluster_lists_both_shards(clickhouse_cluster: list[ClickHouseServer]) -> None:
    for server in clickhouse_cluster:
        rows = server.execute(
            "SELECT shard_num, port FROM system.clusters WHERE cluster = %(c)s ORDER BY shard_num",
            {"c": CLUSTER},
        )
        assert rows == [(i + 1, s.tcp_port) for i, s in enumerate(clickhouse_cluster)]
    # A query through cluster() reaches each shard.
    ports = clickhouse_cluster[0].execute(f"SELECT count() FROM cluster('{CLUSTER}', system.one)")
    assert ports == [(2,)]


def test_restart_in_place_keeps_data(clickhouse_own: ClickHouseServer) -> None:
    clickhouse_own.execute("CREATE TABLE default.t (x UInt32) ENGINE = MergeTree ORDER BY x")
    clickhouse_own.execute("INSERT INTO default.t VALUES", [(1,), (2,)])
    clickhouse_own.kill()
    assert not clickhouse_own.ping()
    clickhouse_own.start()
    assert clickhouse_own.execute("SELECT sum(x) FROM default.t") == [(3,)]


def test_password_user(clickhouse: ClickHouseServer) -> None:
    from clickhouse_driver.errors import ServerException

    good = clickhouse.client(user=PASSWORD_USER, password=TEST_PASSWORD)
    try:
        assert good.execute("SELECT 1") == [(1,)]
    finally:
        good.disconnect()
    bad = clickhouse.client(user=PASSWORD_USER, password="wrong")
    with pytest.raises(ServerException):
        bad.execute("SELECT 1")
    bad.disconnect()

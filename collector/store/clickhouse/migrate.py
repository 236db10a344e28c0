"""Creating and upgrading the schema: the database, ``schema_version`` and every migration not yet
applied, in order — on the one node, or on each shard of the cluster in turn (hosts from
``system.clusters``; DDL ``ON CLUSTER`` would need Keeper, which the servers need not have)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from reach_collector.store.clickhouse.bind import bind
from reach_collector.store.clickhouse.driver import StoreError
from reach_collector.store.clickhouse.schema import MIGRATIONS, SCHEMA_VERSION_DDL, Layout

__all__ = ["SCHEMA_VERSION", "cluster_hosts", "migrate"]

SCHEMA_VERSION = MIGRATIONS[-1].version
Execute = Callable[[str], list[tuple[Any, ...]]]


def migrate(execute: Execute, layout: Layout, where: str = "ClickHouse") -> int:
    """Bring one node's (or shard's) schema to ``SCHEMA_VERSION``; returns the version it was at
    (0: created now). ``execute`` runs one statement; it need not be in the database."""
    db = layout.database
    execute(f"CREATE DATABASE IF NOT EXISTS {db}")
    execute(SCHEMA_VERSION_DDL.format(db=db))
    found = int(execute(f"SELECT max(version) FROM {db}.schema_version")[0][0] or 0)
    if found > SCHEMA_VERSION:
        raise StoreError(
            f"{where}: database {db} has schema version {found}, newer than this collector's "
            f"{SCHEMA_VERSION}: upgrade reach-otel"
        )
    for migration in MIGRATIONS:
        if migration.version <= found:
            continue
        for statement in migration.statements(layout):
            execute(statement)
        execute(
            bind(
                f"INSERT INTO {db}.schema_version (version, description, applied_ns) SELECT ?, ?, ?",
                [migration.version, migration.description, time.time_ns()],
            )
        )
    return found


def cluster_hosts(execute: Execute, cluster: str, where: str = "ClickHouse") -> list[tuple[str, int]]:
    """(host, port) of every server of ``cluster`` (each replica of each shard), as the server's
    ``remote_servers`` names them, shard by shard."""
    rows = execute(
        bind(
            "SELECT shard_num, host_name, port FROM system.clusters WHERE cluster = ? "
            "ORDER BY shard_num, replica_num",
            [cluster],
        )
    )
    if not rows:
        raise StoreError(f"{where}: no cluster {cluster!r} in the server's remote_servers")
    hosts: list[tuple[str, int]] = []
    for _, host, port in rows:
        if (str(host), int(port)) not in hosts:
            hosts.append((str(host), int(port)))
    return hosts

"""Creating and upgrading the schema: the database, ``schema_version``, and the tables at the latest
version (a new database) or each upgrade not yet applied, in order — on the one node, or on each
shard of the cluster in turn (hosts from ``system.clusters``; DDL ``ON CLUSTER`` would need Keeper,
which the servers need not have)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final

from reach_collector.store.clickhouse.bind import bind
from reach_collector.store.clickhouse.driver import StoreError
from reach_collector.store.clickhouse.schema import SCHEMA_VERSION, SCHEMA_VERSION_DDL, VERSIONS, Layout

__all__ = ["SCHEMA_VERSION", "cluster_hosts", "migrate"]

Execute = Callable[[str], list[tuple[Any, ...]]]


def migrate(execute: Execute, layout: Layout, where: str = "ClickHouse") -> int:
    """Bring one node's (or shard's) schema to ``SCHEMA_VERSION``; returns the version it was at
    (0: created now). ``execute`` runs one statement; it need not be in the database. Raises
    StoreError for a version newer than this collector's, or one it cannot upgrade in place."""
    db = layout.database
    execute(f"CREATE DATABASE IF NOT EXISTS {db}")
    execute(SCHEMA_VERSION_DDL.format(db=db))
    found = int(execute(f"SELECT max(version) FROM {db}.schema_version")[0][0] or 0)
    if found > SCHEMA_VERSION:
        raise StoreError(
            f"{where}: database {db} has schema version {found}, newer than this collector's "
            f"{SCHEMA_VERSION}: upgrade reach-otel"
        )
    if found == 0:
        for statement in layout.table_ddl():
            execute(statement)
        _record(execute, db, SCHEMA_VERSION)
        return found
    for version in range(found + 1, SCHEMA_VERSION + 1):
        UPGRADES[version](execute, layout, where)
        _record(execute, db, version)
    return found


def _record(execute: Execute, db: str, version: int) -> None:
    execute(
        bind(
            f"INSERT INTO {db}.schema_version (version, description, applied_ns) SELECT ?, ?, ?",
            [version, VERSIONS[version], time.time_ns()],
        )
    )


def _spans_by_end_time(execute: Execute, layout: Layout, where: str) -> None:
    """1 → 2: the span table and the trace lookup partitioned and ordered by end time. A partition
    key cannot change in place, so an empty version-1 database (what a development build left) has
    its span tables made anew; one holding spans is refused with the way to copy them, rather than
    copied here, where a second collector starting at once would copy them twice."""
    db = layout.database
    # In a cluster, through the Distributed table: every shard's spans, so the first shard refuses
    # before any has changed.
    (held,) = execute(f"SELECT count() FROM {layout.q('spans')}")[0]
    if int(held):
        raise StoreError(
            f"{where}: database {db} holds {int(held):,} spans in schema version 1 (ordered by start "
            "time, from a development build); version 2 orders them by end time and cannot be reached "
            "in place. Point --db at a new database, then copy them with the collectors stopped: "
            f"INSERT INTO NEWDB.spans SELECT * FROM {db}.spans"
        )
    dropped = [layout.local("traces") + "_mv", layout.local("spans"), layout.local("traces")]
    if layout.cluster:  # the Distributed tables name the lookup's columns
        dropped += ["spans", "traces"]
    for table in dropped:
        execute(f"DROP TABLE IF EXISTS {layout.q(table)}")
    for statement in layout.table_ddl():
        execute(statement)


def _evaluations(execute: Execute, layout: Layout, where: str) -> None:
    """2 → 3: the ``evaluations`` side table (and its Distributed table in a cluster); creating it
    IF NOT EXISTS makes running it twice harmless."""
    for statement in layout.side_table_ddl("evaluations"):
        execute(statement)


# version → the upgrade from the version before it
UPGRADES: Final[dict[int, Callable[[Execute, Layout, str], None]]] = {
    2: _spans_by_end_time,
    3: _evaluations,
}
if set(UPGRADES) != set(range(2, SCHEMA_VERSION + 1)):  # pragma: no cover - a version needs its upgrade
    raise ImportError("clickhouse schema VERSIONS and migrate.UPGRADES differ")


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

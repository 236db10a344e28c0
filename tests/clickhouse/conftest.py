"""Fixtures for the ClickHouse tests: real clickhouse-server processes (ch_server) — a node shared
by the session with a fresh database per test, a two-shard cluster on loopback, and a node of a
test's own for the outage tests — always stopped at the end."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from ch_server import (
    CLUSTER,
    ClickHouseServer,
    ensure_clickhouse_server,
    start_cluster,
    start_server,
    stop_all,
)


@pytest.fixture(scope="session")
def clickhouse_binary() -> str:
    return ensure_clickhouse_server()


@pytest.fixture(scope="session")
def clickhouse(
    clickhouse_binary: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ClickHouseServer]:
    """One node for the session; tests keep apart by database (``ch_database``)."""
    server = start_server(clickhouse_binary, tmp_path_factory.mktemp("clickhouse"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def clickhouse_cluster(
    clickhouse_binary: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[ClickHouseServer]]:
    """Two shards on loopback, both listing cluster ``ch_server.CLUSTER``."""
    servers = start_cluster(clickhouse_binary, tmp_path_factory.mktemp("clickhouse-cluster"), 2, CLUSTER)
    yield servers
    stop_all(servers)


@pytest.fixture
def clickhouse_own(
    clickhouse_binary: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ClickHouseServer]:
    """A node of this test's own, which it may stop, kill and start again."""
    server = start_server(clickhouse_binary, tmp_path_factory.mktemp("clickhouse-own"))
    yield server
    server.kill()


@pytest.fixture
def ch_database() -> str:
    """A database name no other test uses (the store creates it)."""
    return f"reach_t_{uuid.uuid4().hex[:12]}"

"""The store's memory: `storage.memory_limit` / `storage.threads` are parsed, validated and applied
to DuckDB; `/metrics` shows DuckDB's memory, the collector's RSS and the spans committed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from collector_helpers import request_with
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from reach_collector.app import create_app
from reach_collector.config import (
    DEFAULT_MEMORY_LIMIT,
    ConfigError,
    Settings,
    from_mapping,
    load,
    parse_memory_limit,
)
from reach_collector.store.duckdb_store import MEMORY, DuckDBStore

MIB = 1024**2


def _setting(store: DuckDBStore, name: str) -> str:
    return str(store.query("SELECT current_setting(?)", [name])[0][0])


def _bytes(store: DuckDBStore) -> int:
    text = _setting(store, "memory_limit")
    number, unit = text.split()
    scale = {"KiB": 1024, "MiB": MIB, "GiB": 1024**3, "TiB": 1024**4}[unit]
    return int(float(number) * scale)


# --- config -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("512MB", "512MB"),
        ("2GiB", "2GiB"),
        ("1.5gb", "1.5GB"),
        (" 300 MiB ", "300MiB"),
        ("25%", "25%"),
        (1 << 30, f"{1 << 30}B"),
    ],
)
def test_memory_limit_values(value: object, expected: str) -> None:
    assert parse_memory_limit(value) == expected
    assert from_mapping({"storage": {"memory_limit": value}}).memory_limit == expected


@pytest.mark.parametrize("value", ["lots", "10MB", "-5MB", "1 PB", "MB", True, 0, "", None])
def test_bad_memory_limit_names_the_key(value: object) -> None:
    with pytest.raises(ConfigError, match=r"storage\.memory_limit: expected a size like 512MB"):
        from_mapping({"storage": {"memory_limit": value}})


@pytest.mark.parametrize("value", ["0%", "150%"])
def test_bad_percentage(value: str) -> None:
    with pytest.raises(ConfigError, match=r"storage\.memory_limit: a percentage of RAM"):
        from_mapping({"storage": {"memory_limit": value}})


def test_threads() -> None:
    assert from_mapping({"storage": {"threads": 3}}).threads == 3
    assert from_mapping({"storage": {"threads": None}}).threads is None
    for bad in (0, 65, "2", 1.5, True):
        with pytest.raises(ConfigError, match=r"storage\.threads: expected an integer between 1 and 64"):
            from_mapping({"storage": {"threads": bad}})


def test_defaults_and_file(tmp_path: Path) -> None:
    s = load(None, env={})
    assert (s.memory_limit, s.threads) == (DEFAULT_MEMORY_LIMIT, 1)
    path = tmp_path / "reach.yaml"
    path.write_text("storage: {retention: 2m, memory_limit: 1GB, threads: 2}\n")
    s = load(path, env={})
    assert (s.retention_s, s.memory_limit, s.threads) == (120, "1GB", 2)
    path.write_text("storage: {memory_limit: 12}\n")
    with pytest.raises(ConfigError, match=rf"{path}: storage\.memory_limit"):
        load(path, env={})


# --- the store ----------------------------------------------------------------------------------
def test_store_applies_memory_limit_and_threads(tmp_path: Path) -> None:
    store = DuckDBStore(tmp_path / "t.duckdb", memory_limit="300MiB", threads=1)
    try:
        assert _bytes(store) == 300 * MIB
        assert _setting(store, "threads") == "1"
    finally:
        store.close()


def test_store_leaves_duckdb_defaults_without_them() -> None:
    store = DuckDBStore(MEMORY)
    try:
        assert _bytes(store) > 1024 * MIB  # DuckDB's own default (80 % of RAM), not ours
        assert int(_setting(store, "threads")) == (os.cpu_count() or 1)
    finally:
        store.close()


def test_in_memory_store_spills_to_a_private_directory_removed_on_close() -> None:
    store = DuckDBStore(MEMORY, memory_limit="64MB")
    spill = Path(_setting(store, "temp_directory"))
    assert spill.is_dir() and spill.resolve() != Path.cwd().resolve()
    store.close()
    assert not spill.exists()


def test_bad_memory_limit_in_the_store_raises(tmp_path: Path) -> None:
    import duckdb

    with pytest.raises(duckdb.Error):
        DuckDBStore(tmp_path / "t.duckdb", memory_limit="lots")


def test_app_opens_its_store_with_the_settings(tmp_path: Path) -> None:
    settings = Settings(db=str(tmp_path / "t.duckdb"), memory_limit="256MiB", threads=1)
    app = create_app(settings, alert_loop=False)
    with TestClient(app, base_url="http://127.0.0.1"):
        assert _bytes(app.state.store) == 256 * MIB
        assert _setting(app.state.store, "threads") == "1"


def _five_spans() -> bytes:
    spans = [{"span_id": bytes([9, 9, 9, 9, 9, 9, 9, i + 1])} for i in range(5)]
    return bytes(request_with(spans).SerializeToString())


# --- /metrics -----------------------------------------------------------------------------------
def test_metrics_show_duckdb_memory_rss_and_stored_spans(tmp_path: Path) -> None:
    store = DuckDBStore(tmp_path / "t.duckdb", memory_limit="256MiB")
    app = create_app(Settings(db=store.path, retention_s=0), store=store, alert_loop=False)
    try:
        with TestClient(app, base_url="http://127.0.0.1") as client:
            response = client.post(
                "/v1/traces", content=_five_spans(), headers={"Content-Type": "application/x-protobuf"}
            )
            assert response.status_code == 200
            values = {
                sample.name: sample.value
                for family in text_string_to_metric_families(client.get("/metrics").text)
                for sample in family.samples
            }
    finally:
        store.close()
    assert values["reach_collector_duckdb_memory_bytes"] > 0
    assert values["reach_collector_spans_stored_total"] == 5
    assert values["process_resident_memory_bytes"] > 10 * MIB


def test_memory_limit_from_the_environment() -> None:
    from reach_collector.config import apply_env

    assert apply_env(Settings(), {"REACH_COLLECTOR_MEMORY_LIMIT": "2GiB"}).memory_limit == "2GiB"
    assert apply_env(Settings(), {"REACH_COLLECTOR_MEMORY_LIMIT": "25%"}).memory_limit == "25%"
    with pytest.raises(ConfigError, match=r"^REACH_COLLECTOR_MEMORY_LIMIT: expected a size"):
        apply_env(Settings(), {"REACH_COLLECTOR_MEMORY_LIMIT": "lots"})

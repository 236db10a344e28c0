"""The config file is read once into a typed tree (``config.CollectorFile``, pydantic models whose
fields use the same value readers as the environment and the flags): values come out typed, and
every problem of a file is reported, each as ``file: key.path: reason`` with the value."""

from __future__ import annotations

from pathlib import Path

import pytest

from reach_collector.config import CollectorFile, ConfigError, from_mapping, load_file
from reach_collector.config_values import validate
from reach_collector.limits import ServerLimits


def test_a_file_reads_into_typed_values() -> None:
    tree = validate(
        CollectorFile,
        {
            "server": {"port": 4400, "header_timeout": "2m", "allowed_hosts": "Collector.Internal"},
            "storage": {"retention": "36h", "memory_limit": "1.5gb", "threads": None},
            "prices": {"m": {"input": 1}},
            "alerting": {"interval": "15s"},  # the alerting package's: passed on, not read here
        },
    )
    assert isinstance(tree.server, ServerLimits)
    assert tree.server.header_timeout_s == 120.0 and isinstance(tree.server.header_timeout_s, float)
    assert tree.server.allowed_hosts == ("collector.internal",)
    assert (tree.storage.retention_s, tree.storage.memory_limit, tree.storage.threads) == (
        129600.0,
        "1.5GB",
        None,
    )
    assert tree.prices["m"].input == 1.0 and tree.prices["m"].output is None
    settings = from_mapping({"server": {"body_timeout": 7}, "prices": {"m": {"input": 1}}})
    assert settings.limits.body_timeout_s == 7.0
    assert settings.prices == {"m": {"input": 1.0}}  # a side not given stays unpriced


def test_every_problem_of_a_file_is_reported_with_its_path_and_value(tmp_path: Path) -> None:
    path = tmp_path / "reach.yaml"
    path.write_text(
        "server: {port: 70000, body_timeout: 2 days}\n"
        "storage: {memory_limit: lots}\n"
        "prices: {gpt: {input: cheap}}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        load_file(path)
    assert str(caught.value).splitlines() == [
        f"{path}: server.body_timeout: expected a duration like 30s, 5m, 1h, 7d; got '2 days'",
        f"{path}: server.port: expected an integer between 0 and 65535, got 70000",
        f"{path}: storage.memory_limit: expected a size like 512MB, 2GiB or 25% (of RAM), at least 64MB; "
        "got 'lots'",
        f"{path}: prices.gpt.input: expected a non-negative number, got 'cheap'",
    ]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            {"server": {"max_conections": 5}},
            "server.max_conections: unknown key (expected one of allowed_hosts, body_timeout, "
            "decode_workers, grpc_idle_timeout, grpc_keepalive, grpc_max_concurrent_rpcs, grpc_port, "
            "header_timeout, host, "
            "keep_alive_timeout, max_body_bytes, max_connections, max_header_bytes, max_inflight_bytes, "
            "max_row_bytes, port); did you mean max_connections?",
        ),
        ({"storag": {}}, "storag: unknown key ("),
        ({"storag": {}}, "; did you mean storage?"),
        ({"prices": {"m": {"inputs": 1}}}, "prices.m.inputs: unknown key (expected one of input, output)"),
        ({"prices": {"m": 3}}, "prices.m: expected a mapping, got int"),
        ({"prices": {1: {"input": 1}}}, "prices: keys must be strings, got 1"),
        ({"auth": "secret"}, "auth: expected a mapping, got str"),
        (
            {"server": {"max_body_bytes": 8192, "max_inflight_bytes": 4096}},
            "server.max_inflight_bytes: must be at least server.max_body_bytes (8192), got 4096",
        ),
        ({"server": {"header_timeout": 0}}, "server.header_timeout: expected a duration above 0s"),
    ],
)
def test_a_bad_value_names_its_full_key_path(doc: dict[object, object], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        from_mapping(doc, "reach.yaml")  # type: ignore[arg-type]
    assert str(caught.value).startswith("reach.yaml: ")
    assert message in str(caught.value)

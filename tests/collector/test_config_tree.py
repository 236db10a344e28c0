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


FULL_ALERTING = """
time_zone: Europe/Berlin
alerting:
  interval: 30s
  thresholds: {billing: 2000}
  rules:
    ReachSuccessRateLow: {for: 2m, window: 5m}
    Slo: {type: burn_rate, objective: 0.999, windows: [{long: 1h, short: 5m, factor: 14.4}]}
    Spend: {type: budget, limit_usd: 5, window: 1d}
    Answers: {type: quality, evaluation: correctness, min_score: 0.7}
users: {alice: {webhook: "http://127.0.0.1:9/hook/"}}
schedules:
  primary: {layers: [{start: "2026-01-05T09:00:00+00:00", length: 1w, members: [alice]}]}
escalation_policies:
  p0: {steps: [{notify: {schedule: primary}, escalate_after: 5m}, {notify: {users: [alice]}}]}
routing: {P0: {escalation_policy: p0}, P2: {action: none}}
owners: {billing: {users: [alice]}}
quality: {default: {good_labels: [correct, "yes"]}}
"""


def test_the_alerting_sections_are_read_with_the_file_into_typed_objects(tmp_path: Path) -> None:
    from reach_collector.alerting.config import from_settings
    from reach_collector.sections.rules import BudgetRuleConfig, BurnRateRuleConfig, BurnWindow

    path = tmp_path / "reach.yaml"
    path.write_text(FULL_ALERTING, encoding="utf-8")
    settings = load_file(path)
    tree = settings.tree  # read by load_file, once; from_settings puts it together
    assert tree.alerting.interval_s == 30.0 and tree.alerting.thresholds == {"billing": 2000.0}
    assert (tree.alerting.success_rate.for_s, tree.alerting.success_rate.window_s) == (120.0, 300.0)
    (slo,) = tree.alerting.burn_rates
    assert isinstance(slo, BurnRateRuleConfig) and slo.name == "Slo"
    assert slo.windows == (BurnWindow(3600.0, 300.0, 14.4),)
    (spend,) = tree.alerting.budgets
    assert isinstance(spend, BudgetRuleConfig) and (spend.limit_usd, spend.window_s) == (5.0, 86400.0)
    assert tree.alerting.qualities[0].min_score == 0.7
    assert tree.users["alice"].webhook == "http://127.0.0.1:9/hook"
    assert tree.escalation_policies["p0"].steps[0].escalate_after_s == 300.0
    assert tree.routing["P2"].action is None and tree.routing["P2"].page is False
    assert tree.routing["P0"].page is True
    assert tree.quality.default.good_labels == ("correct", "yes")
    setup = from_settings(settings)
    layer = setup.schedules["primary"].layers[0]
    assert layer.start.isoformat() == "2026-01-05T10:00:00"  # 09:00 UTC on Berlin's wall clock
    assert setup.owners["billing"].notify is not None and setup.owners["billing"].notify.users == ("alice",)
    assert setup.judgement.good_labels == ("correct", "yes")


def test_every_problem_of_the_alerting_sections_is_reported_at_load(tmp_path: Path) -> None:
    path = tmp_path / "reach.yaml"
    path.write_text(
        "alerting:\n"
        "  rules:\n"
        "    Slo: {type: burn_rate, windows: [{long: 1h, short: 5m, factor: 14.4}, {long: 6h, short: 30m,"
        " factor: fast}]}\n"
        "    Spend: {type: budget, limit_usd: 5, windw: 1d}\n"
        "    Mine: {type: budgett, for: soon}\n"
        "users: {alice: {webhook: alice@example}}\n"
        "routing: {P2: {action: reboot}}\n"
        "quality: {default: {good_labels: [correct, yes]}}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        load_file(path)
    assert str(caught.value).splitlines() == [
        f"{path}: alerting.rules.Slo.windows[1].factor: expected a number between 1e-09 and 1e+06, "
        "got 'fast'",
        f"{path}: alerting.rules.Spend.windw: unknown key (expected one of enabled, for, keep_firing_for, "
        "limit_tokens, limit_usd, min_elapsed, per, severity, type, warn, warn_severity, window); "
        "did you mean window?",
        f"{path}: alerting.rules.Mine.for: expected a duration like 30s, 5m, 1h, 7d; got 'soon'",
        f"{path}: alerting.rules.Mine.type: unknown type 'budgett' (expected one of burn_rate, edge_slo, "
        "budget, topology_drift, quality); did you mean budget?",
        f"{path}: users.alice.webhook: expected an http:// or https:// URL or null, got 'alice@example'",
        f"{path}: routing.P2.action: expected deregister or none, got 'reboot'",
        f"{path}: quality.default.good_labels: expected a non-empty list of names, got ['correct', True] "
        "(quote yes, no, on, off: unquoted, YAML reads them as true or false)",
    ]


def test_a_rules_name_is_its_key() -> None:
    with pytest.raises(ConfigError) as caught:
        from_mapping({"alerting": {"rules": {"Slo": {"type": "burn_rate", "name": "Other"}}}}, "reach.yaml")
    assert str(caught.value).startswith("reach.yaml: alerting.rules.Slo.name: unknown key (expected one of")


def test_settings_built_in_code_read_their_sections_too() -> None:
    from reach_collector.config import Settings

    settings = Settings(sections={"alerting": {"thresholds": {"billing": 250}}})
    assert settings.tree.alerting.thresholds == {"billing": 250.0}
    with pytest.raises(ConfigError, match=r"^alerting\.thresholds\.billing: expected a number between"):
        Settings(sections={"alerting": {"thresholds": {"billing": "fast"}}})

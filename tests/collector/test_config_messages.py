"""Config and window mistakes get a message about the mistake made: a misspelt rule type is an
unknown *type* (with the near name), a YAML syntax error names the file, line and column and no
parser placeholder, and a window of no time says it must be at least 1s."""

from __future__ import annotations

from pathlib import Path

import pytest

from reach_collector.alerting.config import load_alerting
from reach_collector.config import ConfigError, load_file
from reach_collector.text.windows import WindowError, parse_window


def test_a_misspelt_rule_type_is_an_unknown_type_with_the_near_name() -> None:
    doc = {"alerting": {"rules": {"Spend": {"type": "budgett", "limit_usd": 5, "window": "1d"}}}}
    with pytest.raises(ConfigError) as caught:
        load_alerting(doc, source="reach.yaml")
    message = str(caught.value)
    assert "alerting.rules.Spend.type: unknown type 'budgett'" in message
    assert "did you mean budget?" in message
    assert "unknown rule" not in message


def test_a_rule_without_a_type_is_still_an_unknown_rule() -> None:
    with pytest.raises(ConfigError, match=r"alerting.rules.Spend: unknown rule"):
        load_alerting({"alerting": {"rules": {"Spend": {"limit_usd": 5}}}}, source="reach.yaml")


def test_a_yaml_syntax_error_names_the_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "reach.yaml"
    path.write_text("server:\n  port: 4318\n  host: [127.0.0.1\n")
    with pytest.raises(ConfigError) as caught:
        load_file(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: not valid YAML: line ")
    assert "column" in message and "<unicode string>" not in message


@pytest.mark.parametrize("text", ["0m", "0s", " 0h "])
def test_a_window_of_no_time_must_be_at_least_one_second(text: str) -> None:
    with pytest.raises(WindowError) as caught:
        parse_window(text)
    assert str(caught.value) == f"window must be at least 1s; got {text.strip()!r}"


def test_other_bad_windows_keep_their_message() -> None:
    with pytest.raises(WindowError, match="whole number"):
        parse_window("1.5s")
    with pytest.raises(WindowError, match="whole number"):
        parse_window("fivem")


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            {"users": {"alice": {}}, "routing": {"P1": {"notify": {"users": ["alicee"]}}}},
            "routing.P1.notify.users: 'alicee' is not in users (defined: alice); did you mean alice?",
        ),
        (
            {"owners": {"BillingAgent": {"users": ["bob"]}}},
            "owners.BillingAgent.notify.users: 'bob' is not in users (defined: none)",
        ),
        (
            {
                "users": {"mgr": {}},
                "escalation_policies": {"p0": {"steps": [{"notify": {"users": ["mrg"]}}]}},
            },
            "escalation_policies.p0.steps[0].notify.users: 'mrg' is not in users (defined: mgr); "
            "did you mean mgr?",
        ),
    ],
)
def test_a_route_to_someone_who_is_not_a_user_is_an_error(doc: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_alerting(doc, source="reach.yaml")
    assert str(caught.value) == f"reach.yaml: {message}"


def test_a_schedule_member_without_a_user_entry_still_only_warns() -> None:
    doc = {
        "schedules": {
            "primary": {"layers": [{"start": "2026-01-05T09:00:00", "length": "1w", "members": ["carol"]}]}
        },
        "routing": {"P0": {"notify": {"schedule": "primary"}}},
    }
    setup = load_alerting(doc, source="reach.yaml")
    assert any("users.carol: no webhook configured" in w for w in setup.warnings)

"""Budgets (SPEC §15): ``type: budget`` on cost or tokens per agent, per user.id (read from the
attributes JSON) or per gen_ai.conversation.id over a rolling window, on a fake clock over known LLM
spans sent over OTLP/HTTP: the projection warns (severity warning, nobody paged) once the linear
projection crosses the limit, the spent alert fires when the limit is reached (paging the agent's
owner) — both in replay and live, at the minutes the arithmetic says."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from topology_helpers import App, Collector

from reach_collector.alerting.evaluation.state import iso
from reach_collector.config import ConfigError, from_mapping
from reach_otel import semconv as sc

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "alerting"))
from alerting_fakes import Receiver

T0 = 1_700_000_000 - 1_700_000_000 % 3600
MINUTES = 60


def _spend(app: App) -> None:
    """Billing: one LLM call a minute, ending at T0 + 60 k + 30 s, 1000 input tokens of "small"
    ($1 per 1M: $0.001 each), in conversation c-1 for user u-1. Tech: a tenth of that, in c-2."""
    for k in range(MINUTES):
        ctx = app.trace(k * 60_000)
        extra = {sc.GEN_AI_CONVERSATION_ID: "c-1", sc.USER_ID: "u-1"}
        app.llm(ctx, "Billing", k * 60_000 + 29_950, "small", 1000, 0, **extra)
        app.llm(ctx, "Tech", k * 60_000 + 29_950, "small", 100, 0, **{sc.GEN_AI_CONVERSATION_ID: "c-2"})
    app.flush()


def _config(receiver: str) -> dict[str, Any]:
    off = {"enabled": False}
    return {
        "prices": {"small": {"input": 1.0, "output": 2.0}},
        "alerting": {
            "interval": "1m",
            "rules": {
                "ReachSuccessRateLow": off,
                "ReachP99LatencyHigh": off,
                "ReachAgentHeartbeatLost": off,
                "AgentBudget": {
                    "type": "budget",
                    "per": "agent",
                    "limit_usd": 0.05,
                    "window": "1h",
                    "min_elapsed": "5m",
                },
                "ConversationTokens": {
                    "type": "budget",
                    "per": "conversation",
                    "limit_tokens": 10_000,
                    "window": "1h",
                    "min_elapsed": "5m",
                },
                "UserBudget": {
                    "type": "budget",
                    "per": "user",
                    "limit_usd": 0.02,
                    "window": "1h",
                    "warn": False,
                },
            },
        },
        "users": {"alice": {"webhook": f"{receiver}/alice"}, "bob": {"webhook": f"{receiver}/bob"}},
        "routing": {"P1": {"notify": {"users": ["alice"]}}},
        "owners": {"Billing": {"users": ["bob"]}},
    }


# At T0 + m min, Billing has spent $0.001 m since its first call (T0 + 30 s): the projection over
# the hour, 0.001 m × 3600 / (60 m − 30), is above $0.05 from the start and counts once 5 minutes
# have passed (m = 6); the $0.05 is spent at m = 50. Conversation c-1: 1000 tokens a minute, 10 000
# spent at m = 10. User u-1: $0.02 at m = 20, no warning configured. Tech and c-2 stay under.
EXPECTED = [
    (6, "AgentBudgetProjected", "warning", {"agent": "Billing"}, "firing"),
    (6, "ConversationTokensProjected", "warning", {"conversation": "c-1"}, "firing"),
    (10, "ConversationTokensProjected", "warning", {"conversation": "c-1"}, "resolved"),
    (10, "ConversationTokens", "P1", {"conversation": "c-1"}, "firing"),
    (20, "UserBudget", "P1", {"user": "u-1"}, "firing"),
    (50, "AgentBudgetProjected", "warning", {"agent": "Billing"}, "resolved"),
    (50, "AgentBudget", "P1", {"agent": "Billing"}, "firing"),
]


def _minute(stamp: str) -> int:
    return int((datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() - T0) // 60)


def _seen(transitions: list[tuple[int, str, str, dict[str, str], str, str]]) -> list[Any]:
    """(minute, alertname, severity, identifying labels, to) of every change but pending."""
    out = [(m, name, sev, labels, to) for m, name, sev, labels, _frm, to in transitions if to != "pending"]
    return sorted(out, key=lambda t: (t[0], t[4] != "resolved", t[1]))


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as rx:
        yield rx


@pytest.fixture
def budget_collector(
    start_collector: Callable[..., Collector], apps: Callable[..., App], receiver: Receiver
) -> Collector:
    collector = start_collector(
        from_mapping(_config(receiver.url)), clock=lambda: T0 + 3600.0, alert_loop=False
    )
    _spend(apps(collector.url, base_ns=T0 * 1_000_000_000))
    return collector


def _labels(labels: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in labels.items() if k not in ("alertname", "severity")}


def test_replay_shows_the_warning_and_the_spent_alert(
    budget_collector: Collector, receiver: Receiver
) -> None:
    body = {"since": iso(T0), "until": iso(T0 + (MINUTES - 1) * 60), "step": "1m"}
    response = httpx.post(budget_collector.url + "/api/alerts/replay", json=body, timeout=60)
    assert response.status_code == 200, response.text
    replayed = response.json()
    assert replayed["errors"] == []
    got = [
        (_minute(t["time"]), t["alertname"], t["severity"], _labels(t["labels"]), t["from"], t["to"])
        for t in replayed["transitions"]
    ]
    assert _seen(got) == EXPECTED
    warning = next(t for t in replayed["transitions"] if t["alertname"] == "AgentBudgetProjected")
    assert warning["annotations"]["summary"].startswith(
        "agent Billing: on course for $0.07 in 1h (limit $0.05"
    )
    spent = next(
        t for t in replayed["transitions"] if t["alertname"] == "AgentBudget" and t["to"] == "firing"
    )
    assert spent["annotations"]["summary"] == "agent Billing: spent $0.05 of $0.05 in 1h"
    assert receiver.received == []


def test_live_on_a_fake_clock_pages_the_owner_and_never_for_a_warning(
    budget_collector: Collector, receiver: Receiver
) -> None:
    engine = budget_collector.app.state.alerts
    got = []
    for m in range(MINUTES):
        for t in engine.tick(T0 + 60.0 * m):
            got.append(
                (m, t.alertname, t.severity, _labels(dict(t.labels)), t.from_state.value, t.to_state.value)
            )
    assert _seen(got) == EXPECTED
    pages = [
        (path, b["alerts"][0]["labels"]["alertname"])
        for path, b in receiver.received
        if b["status"] == "firing"
    ]
    # The agent budget goes to Billing's owner (bob); the per-conversation and per-user budgets have
    # no agent, so they take the P1 route (alice); warnings page nobody.
    assert sorted(pages) == [
        ("/alice", "ConversationTokens"),
        ("/alice", "UserBudget"),
        ("/bob", "AgentBudget"),
    ]


def test_bad_budget_configs_name_the_key(receiver: Receiver) -> None:
    for change, needle in [
        ({"per": "team"}, r"AgentBudget\.per: expected one of agent, user, conversation"),
        ({"limit_tokens": 5}, r"AgentBudget: set exactly one of limit_usd and limit_tokens"),
        ({"window": "soon"}, r"AgentBudget\.window"),
        ({"warn_severity": "P9"}, r"AgentBudget\.severity: expected one of"),
    ]:
        doc = _config(receiver.url)
        doc["alerting"]["rules"]["AgentBudget"].update(change)
        with pytest.raises(ConfigError, match=needle):
            from reach_collector.alerting.config import from_settings

            from_settings(from_mapping(doc))

"""The quality SLO (SPEC §18, rule type ``quality``): on a real collector, an agent whose answers
are judged bad — while every one of its spans is OK — burns its quality error budget and pages its
owner, live and in replay; an agent judged good does not; bad configurations are one line."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest
from alerting_fakes import Receiver
from alerting_live import Live, live_collector

from reach_collector.alerting.config import load_alerting
from reach_collector.config import ConfigError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "causes"))
from cause_helpers import App

RULE = {
    "type": "quality",
    "evaluation": "correctness",
    "good_labels": ["correct"],
    "objective": 0.9,
    "min_evaluations": 3,
    "windows": [{"long": "5m", "short": "2m", "factor": 1}],
}


def _doc(owner_url: str, route_url: str) -> dict[str, Any]:
    return {
        "alerting": {"rules": {"AnswerQuality": RULE}},
        "users": {"dave": {"webhook": owner_url}, "alice": {"webhook": route_url}},
        "routing": {"P1": {"notify": {"users": ["alice"]}}},
        "owners": {"Billing": {"users": ["dave"]}},
    }


def _judged_requests(c: Live) -> list[tuple[str, str, str, int]]:
    """Six requests a minute ago, every span OK; Billing's answers judged incorrect in five, Triage's
    correct in all six (the verdicts posted as a front end would, on the agents' spans)."""
    app = App(c.url, base_ns=time.time_ns() - 60 * 1_000_000_000)
    spans = []
    try:
        for i in range(6):
            root = app.root(1000 * i, 900, error=None)
            triage = root.agent("Triage", 1000 * i + 10, 880)
            billing = triage.agent("Billing", 1000 * i + 30, 800)
            billing.llm("Billing", "small", 1000 * i + 40, (10, 5))
            spans.append((root.trace_id, triage.span_id, billing.span_id, i))
        app.flush()
    finally:
        app.close()
    for trace_id, triage, billing, i in spans:
        for span_id, label in ((triage, "correct"), (billing, "incorrect" if i < 5 else "correct")):
            body = {"trace_id": trace_id, "span_id": span_id, "name": "correctness", "label": label}
            if label == "incorrect":
                body["comment"] = f"wrong amount in request {i}"
            assert c.post("/api/feedback", body).status_code == 202
    return spans


def test_an_agent_judged_bad_pages_its_owner_though_its_status_codes_are_ok(tmp_path: Path) -> None:
    with (
        Receiver() as dave,
        Receiver() as alice,
        live_collector(tmp_path / "t.duckdb", _doc(dave.url, alice.url), alert_loop=False) as c,
    ):
        requests = _judged_requests(c)
        golden = {g["key"]: g for g in c.get("/api/metrics/golden", window="15m")["groups"]}
        assert golden["Billing"]["errors"] == 0 and golden["Billing"]["calls"] == 6
        now = time.time()
        c.app.state.alerts.tick(now)
        firing = [
            a for a in c.get("/api/alerts", state="firing")["alerts"] if a["alertname"] == "AnswerQuality"
        ]
        assert [(a["labels"]["agent"], a["labels"]["evaluation"]) for a in firing] == [
            ("Billing", "correctness")
        ]
        notes = firing[0]["annotations"]
        assert notes["good_ratio"] == "0.1667" and notes["evaluations"] == "6"
        # its cause (§17 for a quality alert): the evaluation that failed, with its explanation
        assert notes["cause"] == (
            "5 of Billing's 6 answers judged bad on correctness; "
            "the latest incorrect: wrong amount in request 4"
        )
        assert notes["cause_traces"].split(",") == [t for t, *_ in reversed(requests[:5])]
        assert "correctness judged good in 16.7% of 6 answers" in notes["summary"]
        assert notes["value"] == f"{(5 / 6) / 0.1:.4g}"  # the burn: bad share over the budget
        # the owner is paged, not the severity's route
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not dave.bodies():
            time.sleep(0.05)
        paged = [a for body in dave.bodies() for a in body.get("alerts", [body])]
        assert [a["labels"]["alertname"] for a in paged] == ["AnswerQuality"]
        assert not alice.bodies()
        # the same in replay, over the minutes the verdicts were given
        replayed = c.post(
            "/api/alerts/replay",
            {"since": str(int((now - 120) * 1e9)), "until": str(int(now * 1e9)), "step": "1m"},
        )
        assert replayed.status_code == 200, replayed.text
        fired = {
            (t["alertname"], t["labels"]["agent"])
            for t in replayed.json()["transitions"]
            if t["to"] == "firing"
        }
        assert fired == {("AnswerQuality", "Billing")}


def test_bad_quality_rules_are_one_line() -> None:
    for spec, says in (
        ({"type": "quality", "good_labels": ["ok"]}, "alerting.rules.Q.evaluation: required"),
        ({"type": "quality", "evaluation": "c"}, "give good_labels (the labels judged good) or min_score"),
        ({"type": "quality", "evaluation": "c", "good_labels": ["ok"], "min_score": 0.5}, "one of them"),
        ({"type": "quality", "evaluation": "c", "good_labels": []}, "alerting.rules.Q.good_labels"),
        ({"type": "quality", "evaluation": "c", "min_score": "high"}, "alerting.rules.Q.min_score"),
        (
            {"type": "quality", "evaluation": "c", "min_score": 0.5, "objective": 1.5},
            "alerting.rules.Q.objective",
        ),
    ):
        with pytest.raises(ConfigError) as err:
            load_alerting({"alerting": {"rules": {"Q": spec}}})
        assert says in str(err.value), (spec, str(err.value))
    good = load_alerting(
        {"alerting": {"rules": {"Q": {"type": "quality", "evaluation": "c", "min_score": 0.7}}}}
    )
    (rule,) = good.alerting.qualities
    assert (rule.evaluation, rule.min_score, rule.good_labels, rule.objective) == ("c", 0.7, (), 0.95)

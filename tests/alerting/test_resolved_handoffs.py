"""Handoffs resolved (SPEC §18): beside committed, each edge (``/api/topology``) and the window's
handoffs (``/api/metrics/agents``) count the handoffs whose trace has an evaluation judged good —
by the quality rule that watches that evaluation, else by ``quality.default`` — so a handoff the
target committed but whose answer was judged bad is committed, not resolved."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest
from alerting_live import Live, live_collector

from reach_collector.alerting.config import load_alerting
from reach_collector.config import ConfigError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "causes"))
from cause_helpers import App

DOC: dict[str, Any] = {
    "alerting": {
        "rules": {
            "Correct": {"type": "quality", "evaluation": "correctness", "good_labels": ["ok"]},
        }
    },
    "quality": {"default": {"good_labels": ["thumbs_up"], "min_score": 0.7}},
}


def _send(c: Live) -> None:
    """Six handoffs Triage → Billing a minute ago, and the verdicts on their traces."""
    app = App(c.url, base_ns=time.time_ns() - 60 * 1_000_000_000)
    verdicts: list[dict[str, Any]] = [
        {"name": "correctness", "label": "ok"},  # the rule's good label: resolved
        {"name": "correctness", "label": "thumbs_up"},  # good by default, not by its rule: not
        {"name": "user_feedback", "label": "thumbs_up"},  # the default's good label: resolved
        {"name": "user_feedback", "score": 0.9},  # no label, score ≥ the default's: resolved
        {"name": "user_feedback", "score": 0.2},  # judged bad: committed, not resolved
        {},  # no verdict at all
    ]
    traces = []
    try:
        for i in range(6):
            root = app.root(1000 * i, 900, error=None)
            triage = root.agent("Triage", 1000 * i + 10, 880)
            triage.handoff("Triage", "Billing", 1000 * i + 20, 5, status="committed")
            triage.agent("Billing", 1000 * i + 30, 800)
            traces.append(root.trace_id)
        app.flush()
    finally:
        app.close()
    for trace_id, verdict in zip(traces, verdicts, strict=True):
        if verdict:
            assert c.post("/api/feedback", {"trace_id": trace_id, **verdict}).status_code == 202


def test_resolved_differs_from_committed(tmp_path: Path) -> None:
    with live_collector(tmp_path / "t.duckdb", DOC, alert_loop=False) as c:
        _send(c)
        (edge,) = c.get("/api/topology", window="15m")["edges"]
        assert (edge["source"], edge["target"], edge["committed"], edge["resolved"]) == (
            "Triage",
            "Billing",
            6,
            3,
        )
        handoffs = c.get("/api/metrics/agents", window="15m")["handoffs"]
        assert (handoffs["committed"], handoffs["resolved"]) == (6, 3)


def test_quality_default_is_checked() -> None:
    for doc, says in (
        ({"quality": {"defualt": {}}}, "quality.defualt: unknown key"),
        ({"quality": {"default": {"good_labels": []}}}, "quality.default.good_labels"),
        ({"quality": {"default": {"min_score": "high"}}}, "quality.default.min_score"),
    ):
        with pytest.raises(ConfigError) as err:
            load_alerting(doc)
        assert says in str(err.value), (doc, str(err.value))
    judgement = load_alerting(DOC).judgement
    assert judgement.good("correctness", None, "ok") and not judgement.good("correctness", None, "thumbs_up")
    assert judgement.good("other", 0.8, None) and not judgement.good("other", 0.8, "meh")

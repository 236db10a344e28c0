"""A live page carries its cause (SPEC §17): a real collector whose P0 success-rate alert fires for
Billing, after its tool query_invoice timed out in every failed trace, names that cause in one
sentence with its example traces — in `GET /api/alerts`, the webhook a person gets, the
Alertmanager push and the stored `firing` transition."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from cause_helpers import PRICES, App

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "alerting"))
from alerting_fakes import Receiver
from alerting_live import Live, live_collector

_WASTE = 6 * (1000 * 10 + 100 * 30) / 1e6  # each trace's large LLM call after the origin began
SENTENCE = (
    "100 % of Billing's failures start at tool query_invoice (TimeoutError); "
    f"TechSupport never ran in 4 traces; ${_WASTE:.2f} wasted"
)


def _doc(**alerting: Any) -> dict[str, Any]:
    return {
        "prices": PRICES,
        "alerting": {"rules": {"ReachSuccessRateLow": {"for": "0s", "min_calls": 3}}, **alerting},
    }


def _send_failures(c: Live) -> list[str]:
    """Six requests in the last minute that fail at Billing's tool, handed off from Triage; four
    then hand off to TechSupport, which never runs. Returns their trace ids, newest first."""
    app = App(c.url, base_ns=time.time_ns() - 30 * 1_000_000_000)
    ids = []
    try:
        for i in range(6):
            at = 1000 * i
            root = app.root(at, 900)
            triage = root.agent("Triage", at + 10, 880, error="AgentError")
            triage.handoff("Triage", "Billing", at + 20, 5, status="committed")
            billing = triage.agent("Billing", at + 30, 800, error="ToolFailed")
            billing.tool("Billing", "query_invoice", at + 40, 50, error="TimeoutError")
            billing.llm("Billing", "large", at + 100, (1000, 100))
            if i < 4:
                billing.handoff("Billing", "TechSupport", at + 200, 10)
            ids.insert(0, root.trace_id)
        app.flush()
    finally:
        app.close()
    return ids


def _fire(c: Live) -> dict[str, Any]:
    now = time.time()
    c.app.state.alerts.tick(now)
    c.app.state.alerts.tick(now + 0.5)
    firing = c.get("/api/alerts", state="firing")["alerts"]
    by_agent = {a["labels"]["agent"]: a for a in firing if a["alertname"] == "ReachSuccessRateLow"}
    assert sorted(by_agent) == ["Billing", "Triage"]  # Triage failed because Billing did
    return by_agent


def test_a_p0_page_names_its_cause(tmp_path: Path) -> None:
    with Receiver() as alice:
        doc = _doc()
        doc["users"] = {"alice": {"webhook": alice.url}}
        doc["routing"] = {"P0": {"notify": {"users": ["alice"]}}}
        with live_collector(tmp_path / "t.duckdb", doc, alert_loop=False) as c:
            ids = _send_failures(c)
            alerts = _fire(c)
            assert alerts["Billing"]["annotations"]["cause"] == SENTENCE
            assert alerts["Billing"]["annotations"]["cause_traces"] == ",".join(ids[:5])
            # the page about the caller names where its failures start: downstream, in Billing
            assert alerts["Triage"]["annotations"]["cause"] == (
                "100 % of Triage's failures start at tool query_invoice (TimeoutError) in Billing; "
                f"TechSupport never ran in 4 traces; ${_WASTE:.2f} wasted"
            )
            pages = [a for body in alice.bodies() for a in body.get("alerts", [body])]
            paged = next(a["annotations"] for a in pages if a["labels"]["agent"] == "Billing")
            assert (paged["cause"], paged["cause_traces"]) == (SENTENCE, ",".join(ids[:5]))
            stored = c.store.query(
                "SELECT labels, annotations FROM alert_transitions WHERE to_state = 'firing'"
            )
            assert {json.loads(labels)["agent"]: json.loads(notes)["cause"] for labels, notes in stored}[
                "Billing"
            ] == SENTENCE
            # `reach-otel alerts` says it too, under the table, with the trace to open first
            shown = subprocess.run(
                [sys.executable, "-m", "reach_otel", "alerts", "--url", c.url],
                capture_output=True,
                text=True,
                timeout=60,
                env={**os.environ, "COLUMNS": "80"},
            )
            assert shown.returncode == 0, shown.stderr
            why = " ".join(shown.stdout.split("Why they fire", 1)[1].split())
            assert f"P0 ReachSuccessRateLow (Billing): {SENTENCE}" in why
            assert f"reach-otel why {ids[0]} (and 4 more)" in why
            # the cause stays while the alert fires, evaluation after evaluation
            c.app.state.alerts.tick(time.time() + 1)
            again = c.get("/api/alerts", state="firing")["alerts"]
            assert {a["annotations"]["cause"] for a in again if a["labels"]["agent"] == "Billing"} == {
                SENTENCE
            }


def test_the_alertmanager_push_carries_it(tmp_path: Path) -> None:
    with (
        Receiver() as manager,
        live_collector(tmp_path / "t.duckdb", _doc(alertmanager_url=manager.url), alert_loop=False) as c,
    ):
        ids = _send_failures(c)
        _fire(c)
        pushed = [a for body in manager.bodies() for a in body if a["labels"].get("agent") == "Billing"]
        assert pushed, manager.received
        assert pushed[-1]["annotations"]["cause"] == SENTENCE
        assert pushed[-1]["annotations"]["cause_traces"].split(",") == ids[:5]

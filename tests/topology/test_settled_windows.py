"""Edge-SLO and budget windows from settled per-minute counts (StoreAlertData's cache) give the
same answer as a fresh scan of each window: handoff traffic with recorded and inferred outcomes
(targets ending up to 90 s after their handoff) and LLM spend, sent over real OTLP/HTTP to a
collector on a DuckDB file, compared at evaluations every 7.3 s across minute boundaries; spans
arriving late inside the settle lag; a span arriving after its minute settled (the one documented
difference, gone after a restart, which refills the cache from the store); the bound on memory;
the store's retention; the rules' firing times in replay; and that a warm cache reads only the
open edge of the window, never the whole of it."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from servers import ServerThread
from topology_helpers import App

from reach_collector.alerting.config import from_settings
from reach_collector.alerting.evaluation.build import build_rules
from reach_collector.alerting.evaluation.replay import replay
from reach_collector.alerting.inputs.store_data import StoreAlertData
from reach_collector.app import create_app
from reach_collector.config import from_mapping
from reach_collector.query import topology
from reach_collector.store.duckdb_store import DuckDBStore
from reach_otel import semconv as sc

T0 = 1_700_000_000 - 1_700_000_000 % 3600  # an hour boundary in the past
S = 1_000_000_000
MINUTES = 40
SETTLE = 120.0
WINDOWS = (60.0, 90.5, 300.0, 437.25, 900.0, 1800.0)
PRICES = {"small": {"input": 1.0, "output": 2.0}, "large": {"input": 10.0, "output": 30.0}}
EDGES = (("Triage", "Billing"), ("Triage", "Tech"), ("Billing", "Refund"))


def _traffic(app: App, minutes: range, seed: int = 7) -> None:
    """Per minute, per edge, six handoffs at uneven offsets: recorded outcomes, and bare ones whose
    target runs (ok or failing) up to 90 s later — often in a later minute — or never runs. In
    minutes 10–17 Triage → Billing mostly fails. LLM calls per agent, user and conversation."""
    rng = random.Random(seed)
    for m in minutes:
        for j in range(6):
            at = m * 60_000 + j * 9_700 + rng.randrange(0, 2_000)
            ctx = app.trace(at)
            for source, target in EDGES:
                failing = (source, target) == ("Triage", "Billing") and 10 <= m < 18
                kind = rng.choice(["committed", "failed", "rejected", "bare", "bare"])
                if failing and kind != "bare":
                    kind = "failed"
                start = at + rng.randrange(0, 3_000)
                dur = rng.randrange(100, 4_000)
                app.handoff(ctx, source, target, start, dur, None if kind == "bare" else kind)
                if kind == "bare" and rng.random() < 0.8:  # else no target run: unknown
                    later = rng.randrange(0, 90_000)
                    app.agent(
                        ctx,
                        target,
                        start + later,
                        rng.randrange(50, 2_000),
                        error=failing or rng.random() < 0.2,
                    )
            agent = rng.choice(["Billing", "Tech", "Refund"])
            extra = {sc.GEN_AI_CONVERSATION_ID: f"c-{j % 3}", sc.USER_ID: f"u-{m % 4}"}
            app.llm(
                ctx, agent, at + 500, rng.choice(["small", "large"]), rng.randrange(100, 900), 50, **extra
            )
    app.flush()


class Running:
    """A collector on a DuckDB file, stopped (and restartable on the same file) by the test."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self.store = DuckDBStore(db)
        settings = replace(from_mapping({"prices": PRICES}), db=str(db), retention_s=0)
        self.server = ServerThread(create_app(settings, store=self.store, alert_loop=False)).start()
        self.url = self.server.url

    def stop(self) -> None:
        self.server.stop()
        self.store.close()


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Callable[[], Running]]:
    started: list[Running] = []

    def start() -> Running:
        started.append(Running(tmp_path / "traces.duckdb"))
        return started[-1]

    yield start
    for r in started:
        if r.server.thread.is_alive():
            r.stop()


def _send(url: str, minutes: range, seed: int = 7) -> None:
    app = App(url, base_ns=T0 * S)
    try:
        _traffic(app, minutes, seed)
    finally:
        app.close()


def _answers(data: StoreAlertData, now: float) -> tuple[Any, ...]:
    return (
        {w: dict(edges) for w, edges in data.edge_stats(now, WINDOWS).items()},
        *(
            dict(data.spend(now, window, per))
            for window in (437.25, 1800.0)
            for per in ("agent", "user", "conversation")
        ),
    )


def _fresh(store: DuckDBStore) -> StoreAlertData:
    return StoreAlertData(store, prices=PRICES, settle_s=None)


def test_the_cache_answers_as_a_fresh_scan_at_every_evaluation(running: Callable[[], Running]) -> None:
    collector = running()
    _send(collector.url, range(MINUTES))
    cached = StoreAlertData(collector.store, prices=PRICES, settle_s=SETTLE)
    fresh = _fresh(collector.store)
    checked = 0
    for k in range(170):  # T0 + 10 min … + 30.7 min, every 7.3 s: heads and settled minutes move on
        now = T0 + 600 + 7.3 * k
        got, want = _answers(cached, now), _answers(fresh, now)
        assert got == want, f"at T0 + {now - T0:.1f} s"
        checked += sum(len(edges) for edges in want[0].values())
    assert checked > 1000
    # Something to compare: every window has edges, inferred outcomes among them, and spend.
    edges = _answers(fresh, T0 + 1800)[0]
    assert all(len(edges[w]) == 3 for w in WINDOWS if w >= 300)
    assert cached._edges is not None and cached._edges.cache.entries > 0  # the cache was used


def test_late_spans_inside_the_settle_lag_count_and_a_restart_refills(running: Callable[[], Running]) -> None:
    collector = running()
    _send(collector.url, range(20))
    now0 = T0 + 20 * 60 + 20.5
    cached = StoreAlertData(collector.store, prices=PRICES, settle_s=SETTLE)
    before = _answers(cached, now0)
    assert before == _answers(_fresh(collector.store), now0)

    # Late, but inside the settle lag: a committed handoff ending 30 s ago, and a target's run that
    # settles a bare handoff which ended 100 s ago (its minute has not settled: read live).
    app = App(collector.url, base_ns=T0 * S)
    ctx = app.trace(0)
    late_ms = (now0 - T0) * 1000
    app.handoff(ctx, "Triage", "Refund", late_ms - 31_000, 1_000, "committed")
    app.handoff(ctx, "Triage", "Refund", late_ms - 101_000, 1_000)
    app.flush()
    now1 = now0 + 15
    mid = _answers(cached, now1)
    assert mid[0][300.0][("Triage", "Refund")] == (2, 1, 1)  # the bare one: no target yet, unknown
    app.agent(ctx, "Refund", late_ms - 100_500, 60_000)  # ends 40 s ago: committed
    app.flush()
    after = _answers(cached, now1)
    assert after == _answers(_fresh(collector.store), now1)
    assert after[0][300.0][("Triage", "Refund")] == (2, 2, 2)
    assert after[0][1800.0][("Triage", "Refund")] == (2, 2, 2)

    # Later than the settle lag: a handoff span ending 400 s ago arrives after its minute settled.
    # The cache keeps the minute as it read it (as reach_handoffs_total keeps a settled count).
    app.handoff(ctx, "Triage", "Refund", late_ms + 15_000 - 401_000, 1_000, "failed")
    app.flush()
    app.close()
    kept = _answers(cached, now1)[0][1800.0][("Triage", "Refund")]
    assert kept == (2, 2, 2)
    assert _answers(_fresh(collector.store), now1)[0][1800.0][("Triage", "Refund")] == (3, 3, 2)

    # A restart: a new process, the same file; the cache refills from the store and has it.
    collector.stop()
    again = running()
    refilled = StoreAlertData(again.store, prices=PRICES, settle_s=SETTLE)
    assert _answers(refilled, now1) == _answers(_fresh(again.store), now1)
    assert _answers(refilled, now1)[0][1800.0][("Triage", "Refund")] == (3, 3, 2)
    for k in range(1, 12):  # and goes on answering as a fresh scan
        now = now1 + 9.1 * k
        assert _answers(refilled, now) == _answers(_fresh(again.store), now)


def test_a_small_bound_and_the_retention_edge_still_answer_as_a_fresh_scan(
    running: Callable[[], Running],
) -> None:
    collector = running()
    _send(collector.url, range(MINUTES))
    store = collector.store
    tiny = StoreAlertData(store, prices=PRICES, settle_s=SETTLE, max_cached=200)
    for k in range(25):
        now = T0 + 1500 + 11.9 * k
        assert _answers(tiny, now) == _answers(_fresh(store), now)
        assert tiny._edges is not None and tiny._edges.cache.entries <= 200
        assert tiny._spend is not None and all(c.entries <= 200 for c in tiny._spend.caches.values())

    # Retention of 20 minutes: the 30-minute windows reach past it. Spans older than the cut are
    # deleted while the cache runs; its answer follows the store's, as a fresh scan's does.
    kept = StoreAlertData(store, prices=PRICES, settle_s=SETTLE, retention_s=1200)
    now = T0 + 2100.4
    assert _answers(kept, now) == _answers(_fresh(store), now)
    assert store.delete_older_than(int((now - 1200) * S)) > 0
    for k in range(10):
        at = now + 6.1 * k
        assert _answers(kept, at) == _answers(_fresh(store), at)


def _rules() -> list[Any]:
    doc = {
        "prices": PRICES,
        "alerting": {
            "interval": "15s",
            "rules": {
                "ReachSuccessRateLow": {"enabled": False},
                "ReachP99LatencyHigh": {"enabled": False},
                "ReachAgentHeartbeatLost": {"enabled": False},
                "EdgeCommitSLO": {
                    "type": "edge_slo",
                    "objective": 0.95,
                    "min_handoffs": 3,
                    "windows": [
                        {"long": "10m", "short": "1m", "factor": 4},
                        {"long": "30m", "short": "5m", "factor": 2},
                    ],
                },
                "AgentSpend": {
                    "type": "budget",
                    "per": "agent",
                    "limit_usd": 0.05,
                    "window": "30m",
                    "min_elapsed": "2m",
                },
                "UserTokens": {"type": "budget", "per": "user", "limit_tokens": 9000, "window": "20m"},
            },
        },
    }
    return build_rules(from_settings(from_mapping(doc)).alerting)


def test_the_rules_fire_at_the_same_evaluations(running: Callable[[], Running]) -> None:
    collector = running()
    _send(collector.url, range(MINUTES))
    rules = _rules()
    since, until = T0 + 300.0, T0 + 2700.0
    cached = replay(rules, StoreAlertData(collector.store, prices=PRICES, settle_s=SETTLE), since, until, 15)
    fresh = replay(rules, _fresh(collector.store), since, until, 15)
    assert cached.errors == fresh.errors == []
    assert [t.to_dict() for t in cached.transitions] == [t.to_dict() for t in fresh.transitions]
    fired = {(t.alertname, t.to_state.value) for t in fresh.transitions}
    assert {("EdgeCommitSLO", "firing"), ("EdgeCommitSLO", "resolved"), ("AgentSpend", "firing")} <= fired
    assert ("UserTokens", "firing") in fired


def test_a_warm_cache_reads_only_the_open_edge(
    running: Callable[[], Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    collector = running()
    _send(collector.url, range(MINUTES))
    reads: list[tuple[int, int]] = []
    for name in ("edge_handoffs", "edge_counts", "edge_window_stats", "spend_rows", "spend"):
        real = getattr(topology, name)

        def spy(store: Any, lo: int, hi: Any, *args: Any, _real: Any = real, **kw: Any) -> Any:
            # (lo, hi) of the spans read; edge_window_stats takes (now, windows)
            reads.append((lo, hi) if isinstance(hi, int) else (lo - int(max(hi) * S), lo))
            return _real(store, lo, hi, *args, **kw)

        monkeypatch.setattr(topology, name, spy)
    data = StoreAlertData(collector.store, prices=PRICES, settle_s=SETTLE)
    data.edge_stats(T0 + 2000.0, WINDOWS)
    data.spend(T0 + 2000.0, 1800.0, "agent")  # warm: the whole window read once
    assert min(lo for lo, _ in reads) <= int((T0 + 2000 - 1800) * S)
    for k in range(1, 4):
        reads.clear()
        now = T0 + 2000.0 + 13.0 * k  # the same minute's heads: nothing old to read
        data.edge_stats(now, WINDOWS)
        data.spend(now, 1800.0, "agent")
        assert reads, "the open edge is read live"
        oldest = int((now - SETTLE - 60 - 60) * S)  # the open edge, and at most a minute settling
        assert [r for r in reads if r[0] < oldest and r[1] - r[0] > 60 * S] == []
    # Without the cache, each evaluation reads back the whole longest window.
    reads.clear()
    _fresh(collector.store).edge_stats(T0 + 2100.0, WINDOWS)
    assert min(lo for lo, _ in reads) <= int((T0 + 2100 - 1800) * S)

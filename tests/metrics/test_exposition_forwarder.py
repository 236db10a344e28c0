"""/metrics's bookkeeping runs off the acknowledgement path: a commit hands its rows to the
forwarder's thread and returns at once, however slow that bookkeeping is (the store lookups of
handoffs and LLM owners); a scrape waits for the batches committed before it, so they are counted;
a full queue drops (and counts) a batch instead of waiting; a failing batch stops nothing."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from metrics_helpers import NOW_NS, new_trace_id, span, table
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from reach_collector.exposition import registry
from reach_collector.exposition.forwarder import Forwarder
from reach_collector.exposition.registry import Exposition
from reach_otel import semconv as sc


def _value(exposition: Exposition, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(generate_latest(exposition.registry).decode()):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return 0.0


def _agent_batch(agent: str, n: int) -> Any:
    return table([span(new_trace_id(), operation=sc.OP_AGENT, end_ns=NOW_NS, agent=agent) for _ in range(n)])


def test_a_commit_returns_before_slow_bookkeeping_and_a_scrape_sees_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    exposition = Exposition(clock=lambda: NOW_NS / 1e9)
    gate = threading.Event()
    real = exposition._handoff_counts.observe

    def slow(batch: Any) -> Any:  # as a store lookup on a slow store
        gate.wait(10)
        return real(batch)

    monkeypatch.setattr(exposition._handoff_counts, "observe", slow)
    started = time.monotonic()
    exposition.observe_commit(_agent_batch("billing", 3), ())
    assert time.monotonic() - started < 0.5  # the writer's thread did not wait for the lookup
    threading.Timer(0.3, gate.set).start()
    # The scrape waits for the batch committed before it: all three calls are counted.
    assert _value(exposition, "reach_agent_calls_total", agent="billing", status="ok") == 3


def test_batches_are_folded_in_commit_order() -> None:
    seen: list[int] = []
    forward: Forwarder[int] = Forwarder(seen.append, max_pending=10_000)
    for i in range(2000):
        forward.submit(i)
    assert forward.drain(10)
    assert seen == list(range(2000))


def test_a_full_queue_drops_and_counts_instead_of_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_MAX_PENDING_BATCHES", 2)
    exposition = Exposition(clock=lambda: NOW_NS / 1e9)
    gate = threading.Event()
    real = exposition._handoff_counts.observe

    def held(batch: Any) -> Any:
        gate.wait(10)
        return real(batch)

    monkeypatch.setattr(exposition._handoff_counts, "observe", held)
    started = time.monotonic()
    for _ in range(5):  # one folding (held), two waiting, two dropped
        exposition.observe_commit(_agent_batch("billing", 1), ())
        time.sleep(0.05)
    assert time.monotonic() - started < 1.0
    gate.set()
    assert _value(exposition, "reach_agent_calls_total", agent="billing", status="ok") == 3
    assert _value(exposition, "reach_collector_metrics_batches_dropped_total") == 2


def test_a_batch_that_fails_to_fold_stops_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    exposition = Exposition(clock=lambda: NOW_NS / 1e9)
    real = exposition._handoff_counts.observe
    calls = {"n": 0}

    def once_broken(batch: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("a broken batch")
        return real(batch)

    monkeypatch.setattr(exposition._handoff_counts, "observe", once_broken)
    exposition.observe_commit(_agent_batch("billing", 2), ())
    exposition.observe_commit(_agent_batch("billing", 1), ())
    assert _value(exposition, "reach_agent_calls_total", agent="billing", status="ok") == 1

"""``/metrics``' store lookups (a handoff's target run, an LLM call's agent ancestor) run on the
exposition's lookup worker, not on the writer thread: an ingest request is acknowledged once its
rows are committed, whatever a lookup costs; a span in a later batch and a running lookup settle a
pending span once between them; a full lookup queue drops lookups without blocking, and counts
them. Real DuckDB stores, a real collector over HTTP, lookups slowed or held by a patched query."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from metrics_helpers import NOW_NS, Clock, new_span_id, new_trace_id, span, table, write
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from prometheus_client.parser import text_string_to_metric_families

from reach_collector.app import create_app
from reach_collector.config import Settings
from reach_collector.exposition import handoff_counts, llm_owners
from reach_collector.exposition.handoff_counts import HandoffCounts
from reach_collector.exposition.llm_owners import LLMOwners
from reach_collector.exposition.lookups import LookupWorker
from reach_collector.store.duckdb_store import DuckDBStore
from reach_otel import semconv as sc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from servers import ServerThread

MS = 1_000_000
S = 1_000_000_000
SLOW_S = 3.0


class Held:
    """A patched ``rows_of_traces``: each call says it started, waits for ``release`` (or sleeps
    ``delay_s``), then reads the real store."""

    def __init__(self, real: Callable[..., Any], delay_s: float | None = None) -> None:
        self.real, self.delay_s = real, delay_s
        self.started, self.release, self.finished = threading.Event(), threading.Event(), threading.Event()
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        self.started.set()
        if self.delay_s is not None:
            time.sleep(self.delay_s)
        else:
            assert self.release.wait(10)
        try:
            return self.real(*args, **kwargs)
        finally:
            self.finished.set()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[DuckDBStore]:
    store = DuckDBStore(tmp_path / "lookups.duckdb")
    yield store
    store.close()


@pytest.fixture
def worker() -> Iterator[LookupWorker]:
    worker = LookupWorker()
    yield worker
    worker.close()


def _handoff(trace: str, target: str, start_ns: int) -> dict[str, Any]:
    row = span(trace, operation=sc.OP_HANDOFF, end_ns=start_ns + 10 * MS, duration_ms=10.0)
    row.update(handoff_source="A", handoff_target=target, handoff_mode="delegate")
    return row


def _run(trace: str, agent: str, start_ns: int, error: bool = False) -> dict[str, Any]:
    return span(trace, operation=sc.OP_AGENT, end_ns=start_ns + MS, duration_ms=1.0, agent=agent, error=error)


def _observe(counts: HandoffCounts, store: DuckDBStore, rows: list[dict[str, Any]]) -> list[Any]:
    write(store, rows)  # committed first, as the writer does
    return counts.observe(table(rows))


# --- (a) the acknowledgement does not wait for a lookup --------------------------------------------
def _kv(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(string_value=value))


def _otlp(trace: bytes, spans: list[tuple[int, int, dict[str, str]]]) -> bytes:
    """One OTLP/protobuf request: (start ns, end ns, attributes) per span, in one trace."""
    req = ExportTraceServiceRequest()
    resource = req.resource_spans.add()
    resource.resource.attributes.append(_kv(sc.SERVICE_NAME, "lookups-app"))
    scope = resource.scope_spans.add()
    for start, end, attributes in spans:
        s = scope.spans.add()
        s.trace_id, s.span_id = trace, bytes.fromhex(new_span_id())
        s.name = attributes.get(sc.GEN_AI_OPERATION_NAME, "span")
        s.start_time_unix_nano, s.end_time_unix_nano = start, end
        s.attributes.extend(_kv(k, v) for k, v in attributes.items())
    return req.SerializeToString()


def _handoffs(url: str) -> dict[tuple[str, str, str], float]:
    text = httpx.get(url + "/metrics", timeout=30).text
    out: dict[tuple[str, str, str], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "reach_handoffs_total":
                key = (s.labels["target"], s.labels["status"], s.labels["inferred"])
                out[key] = out.get(key, 0.0) + s.value
    return out


@contextlib.contextmanager
def _collector(tmp_path: Path) -> Iterator[tuple[Any, str]]:
    """A real collector app on a DuckDB file, served over HTTP: (the app, its URL); the store is
    closed after the app has shut down."""
    db = tmp_path / "traces.duckdb"
    store = DuckDBStore(db)
    app = create_app(replace(Settings(db=str(db)), retention_s=0), store=store, alert_loop=False)
    try:
        with ServerThread(app) as server:
            yield app, server.url
    finally:
        store.close()


def test_an_ingest_request_is_acknowledged_without_waiting_for_a_slow_lookup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = Held(handoff_counts.rows_of_traces, delay_s=SLOW_S)
    monkeypatch.setattr(handoff_counts, "rows_of_traces", slow)
    trace = bytes.fromhex(new_trace_id())
    start = time.time_ns() - 5 * S
    pb = {"content-type": "application/x-protobuf"}
    target = {sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT, sc.GEN_AI_AGENT_NAME: "B"}
    handoff = {
        sc.GEN_AI_OPERATION_NAME: sc.OP_HANDOFF,
        sc.REACH_HANDOFF_SOURCE: "A",
        sc.REACH_HANDOFF_TARGET: "B",
    }
    with _collector(tmp_path) as (app, url):
        # The target ran (and was exported) first; its handoff, with no recorded outcome, comes
        # in a later request and is looked up in the store: the lookup takes SLOW_S.
        first = httpx.post(url + "/v1/traces", content=_otlp(trace, [(start, start + S, target)]), headers=pb)
        assert first.status_code == 200
        began = time.perf_counter()
        body = _otlp(trace, [(start - S, start + 2 * S, handoff)])
        second = httpx.post(url + "/v1/traces", content=body, headers=pb, timeout=10)
        acknowledged = time.perf_counter() - began
        assert second.status_code == 200
        assert slow.started.wait(5)
        assert acknowledged < SLOW_S / 2, f"acknowledged after {acknowledged:.3f}s"
        assert not slow.finished.is_set()  # the 200 came while the lookup was still running
        # A scrape waits for the lookups queued before it: the handoff is there, counted once.
        assert _handoffs(url) == {("B", "committed", "true"): 1.0}
        assert _handoffs(url) == {("B", "committed", "true"): 1.0}
    assert slow.calls == 1
    assert not app.state.exposition.lookups.running  # the app stopped its worker on shutdown


# --- (b) a later batch and a running lookup settle a handoff once ----------------------------------
def test_a_later_batch_settles_a_handoff_whose_lookup_is_running_once(
    store: DuckDBStore, worker: LookupWorker, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = Held(handoff_counts.rows_of_traces)
    monkeypatch.setattr(handoff_counts, "rows_of_traces", held)
    counts = HandoffCounts(store, Clock(), lookups=worker)
    trace = new_trace_id()
    assert _observe(counts, store, [_handoff(trace, "B", NOW_NS)]) == []
    assert held.started.wait(5)  # its lookup runs, and is held
    assert counts.pending == 1  # still matchable meanwhile
    settled = _observe(counts, store, [_run(trace, "B", NOW_NS + MS)])
    assert [(o[1], o[2], o[4]) for o in settled] == [("B", "committed", True)]
    assert counts.pending == 0
    # The lookup, let go, now sees B's run in the store too: it must not count the handoff again.
    held.release.set()
    assert worker.drain(5) and held.finished.is_set()
    assert counts.expire() == []
    assert _observe(counts, store, [_run(trace, "B", NOW_NS + 2 * MS, error=True)]) == []


def test_a_lookup_that_settles_first_leaves_nothing_for_a_later_batch(
    store: DuckDBStore, worker: LookupWorker
) -> None:
    counts = HandoffCounts(store, Clock(), lookups=worker)
    trace = new_trace_id()
    # The target's run in the same batch as the handoff: the store decides, on the worker.
    assert (
        _observe(counts, store, [_run(trace, "B", NOW_NS + MS, error=True), _handoff(trace, "B", NOW_NS)])
        == []
    )
    assert worker.drain(5)
    assert counts.pending == 0
    # Handed out by the next call, once; a later run of B is no second outcome.
    settled = _observe(counts, store, [_run(trace, "B", NOW_NS + 3 * MS)])
    assert [(o[1], o[2], o[4]) for o in settled] == [("B", "failed", True)]
    assert counts.expire() == [] and _observe(counts, store, [_run(trace, "B", NOW_NS + 4 * MS)]) == []


def test_an_llm_call_settled_by_a_batch_while_its_lookup_runs_is_counted_once(
    store: DuckDBStore, worker: LookupWorker, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = Held(llm_owners.rows_of_traces)
    monkeypatch.setattr(llm_owners, "rows_of_traces", held)
    clock = Clock()
    owners = LLMOwners(store, clock, lookup_after_s=5.0, lookups=worker)
    trace, a, c = new_trace_id(), new_span_id(), new_span_id()
    agent = span(trace, operation=sc.OP_AGENT, span_id=a, end_ns=NOW_NS, duration_ms=900, agent="A")
    chain = span(trace, operation=None, span_id=c, parent=a, end_ns=NOW_NS - S // 10, duration_ms=700)
    call = span(trace, operation=sc.OP_CHAT, parent=c, end_ns=NOW_NS - S // 5, input_tokens=7)
    write(store, [call])
    assert owners.observe(table([call])) == []
    clock.now += 6  # unmoved for lookup_after_s: looked up on the next batch, on the worker
    assert owners.observe(table([])) == []
    assert held.started.wait(5)
    write(store, [chain, agent])
    owned = owners.observe(table([chain, agent]))
    assert [(who, c.input_tokens) for who, c in owned] == [("A", 7)]
    held.release.set()
    assert worker.drain(5) and held.finished.is_set()
    assert owners.expire() == [] and owners.pending == 0
    clock.now += 601
    assert owners.expire() == []


# --- (c) a full queue drops lookups without blocking, and counts them ------------------------------
def test_a_full_lookup_queue_drops_lookups_without_blocking_and_counts_them(
    store: DuckDBStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = Held(handoff_counts.rows_of_traces)
    monkeypatch.setattr(handoff_counts, "rows_of_traces", held)
    worker = LookupWorker(max_queued=1)
    clock = Clock()
    counts = HandoffCounts(store, clock, timeout_s=60, lookups=worker)
    traces = [new_trace_id() for _ in range(3)]
    began = time.perf_counter()
    assert _observe(counts, store, [_handoff(traces[0], "B", NOW_NS)]) == []
    assert held.started.wait(5)  # the first lookup runs (held), the second waits in the queue …
    assert _observe(counts, store, [_handoff(traces[1], "B", NOW_NS)]) == []
    assert _observe(counts, store, [_handoff(traces[2], "B", NOW_NS)]) == []  # … the third is dropped
    assert time.perf_counter() - began < 5.0  # never waits for the lookup held (up to 10 s)
    assert worker.dropped == 1 and counts.pending == 3
    # A dropped lookup's handoff stays pending: a later batch still settles it …
    settled = _observe(counts, store, [_run(traces[2], "B", NOW_NS + MS)])
    assert [(o[1], o[2]) for o in settled] == [("B", "committed")]
    held.release.set()
    assert worker.drain(5)
    assert counts.expire() == [] and counts.pending == 2  # the two looked up found nothing
    # … and the others expire at their deadline, as today.
    clock.now += 61
    expired = counts.expire(wait_s=5)
    assert [(o[1], o[2]) for o in expired] == [("B", "unknown")] * 2 and counts.pending == 0
    worker.close()
    assert not worker.running and not worker.submit(lambda: None) and worker.dropped == 2


def test_a_scrape_waits_only_for_the_lookups_queued_before_it(worker: LookupWorker) -> None:
    first, second, scraping = threading.Event(), threading.Event(), threading.Event()
    assert worker.submit(partial(first.wait, 10))
    drained: list[bool] = []

    def scrape() -> None:
        scraping.set()
        drained.append(worker.drain(10))

    scraper = threading.Thread(target=scrape)
    scraper.start()
    assert scraping.wait(5)
    time.sleep(0.2)  # the scrape is waiting for the first lookup
    assert worker.submit(partial(second.wait, 10))  # ingest goes on meanwhile
    first.set()
    scraper.join(8)
    assert drained == [True]  # without waiting for the lookup queued after the scrape began
    assert not worker.drain(0.05)
    second.set()
    assert worker.drain(5)


# --- evaluations: their agent lookup is off the acknowledgement path too -------------------------
def _evaluations(url: str) -> dict[tuple[str, str, str], float]:
    text = httpx.get(url + "/metrics", timeout=30).text
    return {
        (s.labels["agent"], s.labels["evaluation"], s.labels["label"]): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "reach_evaluations_total"
    }


def test_an_evaluation_is_acknowledged_without_waiting_for_its_agent_lookup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reach_collector.exposition import evaluations

    slow = Held(evaluations.owners_of, delay_s=SLOW_S)
    monkeypatch.setattr(evaluations, "owners_of", slow)
    trace = bytes.fromhex(new_trace_id())
    start = time.time_ns() - 5 * S
    agent = {sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT, sc.GEN_AI_AGENT_NAME: "Billing"}
    with _collector(tmp_path) as (_, url):
        body = _otlp(trace, [(start, start + S, agent)])
        pb = {"content-type": "application/x-protobuf"}
        posted = httpx.post(url + "/v1/traces", content=body, headers=pb)
        assert posted.status_code == 200
        began = time.perf_counter()
        verdict = {"trace_id": trace.hex(), "label": "good"}
        answer = httpx.post(url + "/api/feedback", json=verdict, timeout=10)
        acknowledged = time.perf_counter() - began
        assert answer.status_code == 202
        assert slow.started.wait(5)
        assert acknowledged < SLOW_S / 2, f"acknowledged after {acknowledged:.3f}s"
        assert not slow.finished.is_set()  # stored and answered while the lookup still ran
        # A scrape waits for the lookups queued before it: the verdict is counted, once, under the
        # agent of the trace's root span.
        assert _evaluations(url) == {("Billing", "user_feedback", "good"): 1.0}
        assert _evaluations(url) == {("Billing", "user_feedback", "good"): 1.0}
    assert slow.calls == 1

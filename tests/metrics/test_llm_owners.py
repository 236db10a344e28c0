"""``LLMOwners``: an LLM span without an agent attribute is counted under its nearest agent ancestor
in ``/metrics``, whatever order its spans arrive in (a fake clock, a real DuckDB store)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from metrics_helpers import NOW_NS, Clock, new_span_id, new_trace_id, span, table, write
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from reach_collector.exposition.llm_owners import LLMCalls, LLMOwners
from reach_collector.exposition.registry import Exposition
from reach_collector.query import metrics
from reach_collector.store.duckdb_store import DuckDBStore
from reach_otel import semconv as sc

S = 1_000_000_000


class CountingStore:
    """The real store, counting the queries made of it."""

    def __init__(self, inner: DuckDBStore) -> None:
        self.inner, self.queries = inner, 0

    def query(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        self.queries += 1
        return self.inner.query(sql, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture
def store(tmp_path: Path) -> Any:
    inner = DuckDBStore(tmp_path / "owners.duckdb")
    yield CountingStore(inner)
    inner.close()


def _chain(trace: str) -> dict[str, dict[str, Any]]:
    """An agent A, a chain span under it, and two LLM spans without an agent attribute (one under
    the chain, one right under A, failing), each ending before its parent."""
    a, c = new_span_id(), new_span_id()
    return {
        "agent": span(trace, operation=sc.OP_AGENT, span_id=a, end_ns=NOW_NS, duration_ms=900, agent="A"),
        "chain": span(trace, operation=None, span_id=c, parent=a, end_ns=NOW_NS - S // 10, duration_ms=700),
        "llm": span(
            trace,
            operation=sc.OP_CHAT,
            parent=c,
            end_ns=NOW_NS - S // 5,
            model="m",
            input_tokens=7,
            output_tokens=3,
        ),
        "failed": span(
            trace,
            operation=sc.OP_CHAT,
            parent=a,
            end_ns=NOW_NS - S // 5,
            error=True,
            duration_ms=30,
            model="m",
        ),
    }


def _observe(owners: LLMOwners, store: Any, rows: list[dict[str, Any]]) -> list[tuple[str | None, LLMCalls]]:
    batch = table(rows)
    write(store.inner, batch)  # committed first, as the writer does
    return owners.observe(batch)


def _agents(owned: list[tuple[str | None, LLMCalls]]) -> list[tuple[str | None, int, bool]]:
    return sorted(((agent, call.input_tokens, call.error) for agent, call in owned), key=repr)


def test_spans_in_one_batch_are_attributed_at_once(store: Any) -> None:
    owners = LLMOwners(store, Clock())
    spans = _chain(new_trace_id())
    owned = _observe(owners, store, list(spans.values()))
    assert _agents(owned) == [("A", 0, True), ("A", 7, False)]
    assert owners.pending == 0 and store.queries == 0


def test_children_first_wait_for_their_ancestors_batch(store: Any) -> None:
    clock = Clock()
    owners = LLMOwners(store, clock)
    spans = _chain(new_trace_id())
    # One span per request, in end order: the hardest order, and the one SimpleSpanProcessor sends.
    assert _observe(owners, store, [spans["llm"]]) == []
    assert _observe(owners, store, [spans["failed"]]) == []
    assert _observe(owners, store, [spans["chain"]]) == []  # the walk moves up to A, and waits
    assert owners.pending == 2
    clock.now += 1
    owned = _observe(owners, store, [spans["agent"]])
    assert _agents(owned) == [("A", 0, True), ("A", 7, False)]
    assert owners.pending == 0 and store.queries == 0
    call = next(c for agent, c in owned if not c.error)
    assert (call.operation, call.model, call.output_tokens, call.seconds) == (sc.OP_CHAT, "m", 3, 0.01)


def test_an_ancestor_that_came_first_is_found_in_the_store_once(store: Any) -> None:
    clock = Clock()
    owners = LLMOwners(store, clock, lookup_after_s=5.0)
    spans = _chain(new_trace_id())
    assert _observe(owners, store, [spans["agent"], spans["chain"]]) == []
    assert _observe(owners, store, [spans["llm"]]) == []
    # Batches keep coming: no lookup before lookup_after_s, whatever the number of batches.
    for _ in range(20):
        clock.now += 0.2
        assert _observe(owners, store, [span(new_trace_id(), operation=sc.OP_TOOL, end_ns=NOW_NS)]) == []
    assert store.queries == 0
    clock.now += 1.5
    owned = _observe(owners, store, [span(new_trace_id(), operation=sc.OP_TOOL, end_ns=NOW_NS)])
    assert _agents(owned) == [("A", 7, False)]
    assert store.queries == 1 and owners.pending == 0


def test_a_walk_waits_for_the_rest_of_a_chain_after_its_lookup(store: Any) -> None:
    clock = Clock()
    owners = LLMOwners(store, clock, lookup_after_s=5.0)
    spans = _chain(new_trace_id())
    _observe(owners, store, [spans["chain"]])  # the chain span first (it outlived nothing: odd, allowed)
    assert _observe(owners, store, [spans["llm"]]) == []
    clock.now += 6
    assert _observe(owners, store, []) == []  # looked up: the chain is stored, A not yet
    assert store.queries == 1 and owners.pending == 1
    clock.now += 60
    assert _agents(_observe(owners, store, [spans["agent"]])) == [("A", 7, False)]
    assert store.queries == 1


def test_past_the_timeout_a_call_is_counted_as_it_stands(store: Any) -> None:
    clock = Clock()
    owners = LLMOwners(store, clock, timeout_s=60.0)
    orphan, late = _chain(new_trace_id()), _chain(new_trace_id())
    assert _observe(owners, store, [orphan["llm"], late["llm"]]) == []
    # Another collector stored late's ancestors: the last lookup finds them; orphan's never come.
    write(store.inner, [late["chain"], late["agent"]])
    clock.now += 59
    assert owners.expire() == []
    clock.now += 2
    assert _agents(owners.expire()) == [("A", 7, False), (None, 7, False)]
    assert owners.pending == 0


def test_a_root_without_an_agent_is_counted_at_once_without_one(store: Any) -> None:
    owners = LLMOwners(store, Clock())
    trace = new_trace_id()
    root = new_span_id()
    rows = [
        span(trace, operation=sc.OP_WORKFLOW, span_id=root, end_ns=NOW_NS),
        span(trace, operation=sc.OP_CHAT, parent=root, end_ns=NOW_NS, input_tokens=4),
        span(new_trace_id(), operation=sc.OP_EMBEDDINGS, end_ns=NOW_NS, input_tokens=2),
        # An agent attribute of its own: not this class's to count.
        span(trace, operation=sc.OP_CHAT, parent=root, end_ns=NOW_NS, agent="B", input_tokens=9),
    ]
    assert _agents(_observe(owners, store, rows)) == [(None, 2, False), (None, 4, False)]


def test_past_max_pending_the_oldest_are_counted_without_an_agent(store: Any) -> None:
    owners = LLMOwners(store, Clock(), max_pending=3)
    chains = [_chain(new_trace_id()) for _ in range(5)]
    owned = []
    for chain in chains:
        owned += _observe(owners, store, [chain["llm"]])
    assert _agents(owned) == [(None, 7, False), (None, 7, False)]
    assert owners.pending == 3
    assert _agents(_observe(owners, store, [chains[4]["chain"], chains[4]["agent"]])) == [("A", 7, False)]


def test_a_chain_that_loops_ends(store: Any) -> None:
    owners = LLMOwners(store, Clock())
    trace, x, y = new_trace_id(), new_span_id(), new_span_id()
    rows = [
        span(trace, operation=None, span_id=x, parent=y, end_ns=NOW_NS),
        span(trace, operation=None, span_id=y, parent=x, end_ns=NOW_NS),
        span(trace, operation=sc.OP_CHAT, parent=x, end_ns=NOW_NS, input_tokens=1),
    ]
    assert _agents(_observe(owners, store, rows)) == [(None, 1, False)]


def _tokens(exposition: Exposition) -> dict[tuple[str, str], float]:
    out = {}
    for family in text_string_to_metric_families(generate_latest(exposition.registry).decode()):
        if family.name == "reach_agent_tokens":
            for s in family.samples:
                if s.name.endswith("_total"):
                    out[(s.labels["agent"], s.labels["type"])] = s.value
    return out


def test_the_exposition_counts_them_under_the_agent_as_the_api_does(store: Any) -> None:
    clock = Clock()
    exposition = Exposition(store, clock, prices={"m": {"input": 1.0, "output": 2.0}})
    spans = _chain(new_trace_id())
    for name in ("llm", "failed", "chain"):
        batch = table([spans[name]])
        write(store.inner, batch)
        exposition.observe(batch)
    assert _tokens(exposition) == {}  # not "unknown" now and something else later: held
    batch = table([spans["agent"]])
    write(store.inner, batch)
    exposition.observe(batch)
    assert _tokens(exposition) == {("A", "input"): 7.0, ("A", "output"): 3.0}
    api = metrics.agents(store.inner, NOW_NS + S, 300, {"m": {"input": 1.0, "output": 2.0}})
    (entry,) = api["agents"]
    assert (entry["agent"], entry["input_tokens"], entry["output_tokens"]) == ("A", 7, 3)
    text = generate_latest(exposition.registry).decode()
    assert 'reach_agent_calls_total{agent="A",operation="chat",status="error"} 1.0' in text
    assert 'reach_agent_calls_total{agent="A",operation="chat",status="ok"} 1.0' in text
    assert 'reach_agent_cost_usd_total{agent="A",model="m"} 1.3e-05' in text
    assert 'agent="unknown"' not in text


def test_a_span_id_of_another_trace_is_no_parent(store: Any) -> None:
    owners = LLMOwners(store, Clock())
    shared = new_span_id()  # the same span id in two traces of one batch (hostile, or a collision)
    one, two = new_trace_id(), new_trace_id()
    rows = [
        span(one, operation=sc.OP_AGENT, span_id=shared, end_ns=NOW_NS, agent="Other"),
        span(two, operation=sc.OP_AGENT, span_id=shared, end_ns=NOW_NS, agent="Mine"),
        span(two, operation=sc.OP_CHAT, parent=shared, end_ns=NOW_NS, input_tokens=5),
        span(new_trace_id(), operation=sc.OP_CHAT, parent=shared, end_ns=NOW_NS, input_tokens=6),
    ]
    assert _agents(_observe(owners, store, rows)) == [("Mine", 5, False)]
    assert owners.pending == 1  # the third trace's parent is not in the batch

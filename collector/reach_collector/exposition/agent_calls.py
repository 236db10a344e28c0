"""Agent calls, their durations, LLM tokens and cost on ``/metrics``: folded in per committed batch
from the stats the decoder folded; an LLM call without an agent attribute is counted under its
agent ancestor once ``LLMOwners`` knows it; cost is priced at ingest from the configured table."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Final

import pyarrow as pa
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from reach_collector.exposition._prom import Bounded, Hist, histogram_family
from reach_collector.exposition.llm_owners import LLMOwners, Owned
from reach_collector.ingest.batch_stats import DURATION_BUCKETS, BatchStats
from reach_collector.query.pricing import PriceTable
from reach_otel import semconv as sc

__all__ = ["AgentCalls"]

_LLM: Final = frozenset(sc.LLM_OPERATIONS)


class AgentCalls(Collector):
    """``reach_agent_calls``, ``reach_agent_call_duration_seconds``, ``reach_agent_tokens`` and
    ``reach_agent_cost_usd``. Thread-safe: the writer thread observes, scrapes collect."""

    def __init__(
        self,
        owners: LLMOwners,
        agent: Bounded,
        model: Bounded,
        prices: Mapping[str, Mapping[str, float]] | None,
        scrape_wait_s: float,
    ) -> None:
        self._owners = owners
        self._agent = agent
        self._model = model
        self._prices = PriceTable(prices)
        self._wait = scrape_wait_s
        self._lock = threading.Lock()
        self._calls: dict[tuple[str, str, str], int] = {}
        self._durations: dict[tuple[str, str], Hist] = {}
        self._tokens: dict[tuple[str, str, str], int] = {}
        self._cost: dict[tuple[str, str], float] = {}

    def observe(self, table: pa.Table, stats: Sequence[BatchStats]) -> None:
        """One commit: its rows (for the LLM calls' owners) and each request's stats."""
        owned = self._owners.observe(table)
        with self._lock:
            self._count_owned(owned)
            for batch in stats:
                for (agent, op, err, bucket), (n, total) in batch.calls.items():
                    if agent is None and op in _LLM:
                        continue  # counted under its agent ancestor, from LLMOwners
                    self._add_calls(agent, str(op), err, bucket, int(n), total)
                for (agent, model), (tin, tout) in batch.tokens.items():
                    if agent is not None:  # an LLM span without one is counted from LLMOwners
                        self._add_tokens(agent, model, int(tin), int(tout))

    def collect(self) -> Iterator[Metric]:
        owned = self._owners.expire(self._wait)  # held past the timeout: settled before showing
        with self._lock:
            self._count_owned(owned)
            calls = CounterMetricFamily(
                "reach_agent_calls", "Spans by agent, operation and status (handoffs excluded).",
                labels=["agent", "operation", "status"],
            )  # fmt: skip
            for call, n in sorted(self._calls.items()):
                calls.add_metric(list(call), n)
            durations = histogram_family(
                "reach_agent_call_duration_seconds", "Span duration by agent and operation.",
                ["agent", "operation"], DURATION_BUCKETS, self._durations,
            )  # fmt: skip
            tokens = CounterMetricFamily(
                "reach_agent_tokens",
                "LLM tokens by agent, model and type.",
                labels=["agent", "model", "type"],
            )
            for token, n in sorted(self._tokens.items()):
                tokens.add_metric(list(token), n)
            cost = CounterMetricFamily(
                "reach_agent_cost_usd", "LLM cost by agent and model at the collector's price table (USD).",
                labels=["agent", "model"],
            )  # fmt: skip
            for priced, usd in sorted(self._cost.items()):
                cost.add_metric(list(priced), usd)
        yield from (calls, durations, tokens, cost)

    # --- under the lock ---------------------------------------------------------------------------
    def _add_calls(self, agent: str | None, op: str, err: bool, bucket: int, n: int, total: float) -> None:
        key = (self._agent(agent), op)
        counter = (key[0], key[1], "error" if err else "ok")
        self._calls[counter] = self._calls.get(counter, 0) + n
        hist = self._durations.get(key)
        if hist is None:
            hist = self._durations[key] = Hist(len(DURATION_BUCKETS))
        hist.buckets[bucket] += n
        hist.sum += total

    def _add_tokens(self, agent: str | None, model: str | None, tin: int, tout: int) -> None:
        a, m = self._agent(agent), self._model(model)
        for kind, value in (("input", tin), ("output", tout)):
            if value:
                self._tokens[(a, m, kind)] = self._tokens.get((a, m, kind), 0) + value
        # Priced by the raw model name (before bounding); an unpriced model has no cost series,
        # as /api/metrics/agents gives it a null cost, never 0.
        usd = self._prices.usd(model, tin, tout)
        if usd is not None and (tin or tout):
            self._cost[(a, m)] = self._cost.get((a, m), 0.0) + usd

    def _count_owned(self, owned: Iterable[Owned]) -> None:
        """LLM calls whose agent is now known (None: none was found)."""
        for agent, calls in owned:
            self._add_calls(agent, calls.operation, calls.error, calls.bucket, calls.n, calls.seconds)
            self._add_tokens(agent, calls.model, calls.input_tokens, calls.output_tokens)

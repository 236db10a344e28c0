"""Per-node overhead of reach_otel's LangGraph instrumentation: the same graphs, instrumented and not.

Graphs, all in process (no HTTP, so the instrumentation's own cost is what differs):
``plain`` — ten plain function nodes in a row (no agent: the cost of a node we only watch);
``agents`` — five nodes in a row, each calling a LangChain fake chat model (each an agent with a
chat span, and a handoff between consecutive agents). Spans go to a TracerProvider with a
BatchSpanProcessor and a discarding exporter. Rounds alternate three variants — uninstrumented,
a no-op callback handler added the same way (what LangChain's callback dispatch costs by itself,
which any callback-based instrumentation pays), and reach_otel — and overhead is paired per round,
then the median, in CPU time.

    python bench/langgraph_overhead.py [--rounds 15] [--runs 200]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any, Protocol

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.tracers import context as lc_context
from langgraph.graph import END, START, MessagesState, StateGraph
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from reach_otel.handler import TelemetryHandler, set_handler
from reach_otel.instrumentation.langgraph import LangGraphInstrumentor


class Noop(BaseCallbackHandler):
    run_inline = True


# The default is what every Context sees, as with the instrumentor's own hook.
_NOOP: ContextVar[BaseCallbackHandler | None] = ContextVar("bench_noop", default=Noop())  # noqa: B039


def with_noop(graph: Any, runs: int) -> float:
    lc_context.register_configure_hook(_NOOP, True)
    try:
        return timed(graph, runs)
    finally:
        lc_context._configure_hooks[:] = [h for h in lc_context._configure_hooks if h[0] is not _NOOP]


class Discard(SpanExporter):
    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS


class Node(Protocol):
    """A graph node. A protocol, not ``Callable[[MessagesState], ...]``: mypy infers ``add_node``'s
    state type from a protocol's ``__call__`` but not from a Callable taking a TypedDict."""

    def __call__(self, state: MessagesState) -> dict[str, Any]: ...


def chain(nodes: list[tuple[str, Node]]) -> Any:
    graph = StateGraph(MessagesState)
    previous = START
    for name, fn in nodes:
        graph.add_node(name, fn)
        graph.add_edge(previous, name)
        previous = name
    graph.add_edge(previous, END)
    return graph.compile(name="bench")


def plain_graph() -> tuple[Any, int]:
    def step(state: MessagesState) -> dict[str, Any]:
        return {}

    return chain([(f"step{i}", step) for i in range(10)]), 10


def agents_graph() -> tuple[Any, int]:
    model = FakeListChatModel(responses=["fine"] * 10_000_000)

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke("how are things?")]}

    return chain([(f"agent{i}", agent) for i in range(5)]), 5


def timed(graph: Any, runs: int) -> float:
    """CPU seconds of this process per invocation (the exporter thread's included): on a shared
    machine wall time mostly measures the neighbours."""
    start = time.process_time()
    for _ in range(runs):
        graph.invoke({"messages": []})
    return (time.process_time() - start) / runs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args(argv)

    exporter = Discard()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=65_536))
    set_handler(TelemetryHandler(tracer_provider=provider))
    instrumentor = LangGraphInstrumentor()
    for label, build in (("plain", plain_graph), ("agents", agents_graph)):
        graph, nodes = build()
        timed(graph, 20)  # warm up both paths
        instrumentor.instrument()
        timed(graph, 20)
        instrumentor.uninstrument()
        base: list[float] = []
        noop: list[float] = []
        ours: list[float] = []
        for _ in range(args.rounds):
            without = timed(graph, args.runs)
            noop.append(with_noop(graph, args.runs) - without)
            instrumentor.instrument()
            try:
                ours.append(timed(graph, args.runs) - without)
            finally:
                instrumentor.uninstrument()
            base.append(without)
        base_us, noop_us, ours_us = (statistics.median(v) / nodes * 1e6 for v in (base, noop, ours))
        print(
            f"{label:7s} {nodes:2d} nodes: uninstrumented {base_us:6.1f} µs/node; "
            f"no-op callback handler +{noop_us:5.1f} µs/node ({noop_us / base_us:+.0%}); "
            f"reach_otel +{ours_us:5.1f} µs/node ({ours_us / base_us:+.0%})"
        )
    provider.force_flush()
    provider.shutdown()
    print(f"spans exported: {exporter.spans}")


if __name__ == "__main__":
    main()

"""Decorator overhead: ``@reach_otel.tool`` vs one hand-written OTel SDK span vs no instrumentation.

All three variants run interleaved in one process (rounds in shuffled order) against the same
TracerProvider and BatchSpanProcessor with an exporter that discards, so the ratio compares the
span work alone. The hand-written span carries the same attributes as the decorator's.

    python bench/span_overhead.py [--rounds 30] [--calls 2000]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable, Sequence

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind
from opentelemetry.util.types import AttributeValue

import reach_otel
from reach_otel import semconv as sc
from reach_otel.handler import TelemetryHandler, set_handler


class DiscardExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def lookup(invoice_id: int) -> int:
    return invoice_id + 1


def build_variants(provider: TracerProvider) -> dict[str, Callable[[int], int]]:
    tracer = provider.get_tracer("bench")

    def handwritten(invoice_id: int) -> int:
        attributes: dict[str, AttributeValue] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_TOOL,
            sc.GEN_AI_TOOL_NAME: "lookup",
            sc.GEN_AI_TOOL_CALL_ID: f"call_{random.getrandbits(64):016x}",
            sc.GEN_AI_TOOL_TYPE: sc.TOOL_TYPE_FUNCTION,
        }
        with tracer.start_as_current_span(
            "execute_tool lookup", kind=SpanKind.INTERNAL, attributes=attributes
        ):
            return lookup(invoice_id)

    def handwritten_agent(invoice_id: int) -> int:
        attributes: dict[str, AttributeValue] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT,
            sc.GEN_AI_AGENT_NAME: "Billing",
            sc.GEN_AI_AGENT_ID: "Billing",
            sc.REACH_HOP_COUNT: 0,
        }
        with tracer.start_as_current_span(
            "invoke_agent Billing", kind=SpanKind.INTERNAL, attributes=attributes
        ) as span:
            result = lookup(invoice_id)
            span.set_attributes(
                {
                    sc.GEN_AI_USAGE_INPUT_TOKENS: 0,
                    sc.GEN_AI_USAGE_OUTPUT_TOKENS: 0,
                    sc.REACH_AGENT_LLM_CALLS: 0,
                    sc.REACH_AGENT_TOOL_CALLS: 0,
                }
            )
            return result

    return {
        "no instrumentation": lookup,
        "hand-written OTel span": handwritten,
        "@reach_otel.tool": reach_otel.tool(name="lookup")(lookup),
        "hand-written agent span": handwritten_agent,
        "@reach_otel.agent": reach_otel.agent(name="Billing")(lookup),
    }


def per_call_us(fn: Callable[[int], int], calls: int) -> float:
    start = time.perf_counter()
    for i in range(calls):
        fn(i)
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(DiscardExporter(), max_queue_size=1 << 16))
    set_handler(TelemetryHandler(tracer_provider=provider))
    variants = build_variants(provider)
    for fn in variants.values():  # warm-up
        per_call_us(fn, args.calls)

    samples: dict[str, list[float]] = {name: [] for name in variants}
    ratios: list[float] = []
    agent_ratios: list[float] = []
    order = list(variants)
    for _ in range(args.rounds):
        random.shuffle(order)
        this_round = {name: per_call_us(variants[name], args.calls) for name in order}
        for name, value in this_round.items():
            samples[name].append(value)
        ratios.append(this_round["@reach_otel.tool"] / this_round["hand-written OTel span"])
        agent_ratios.append(this_round["@reach_otel.agent"] / this_round["hand-written agent span"])
    provider.shutdown()

    baseline = {
        "@reach_otel.tool": "hand-written OTel span",
        "@reach_otel.agent": "hand-written agent span",
    }
    print(f"{'variant':<24} {'median µs/call':>15} {'p10':>8} {'p90':>8} {'× hand-written':>15}")
    for name, values in samples.items():
        q = statistics.quantiles(values, n=10)
        med = statistics.median(values)
        ref = baseline.get(name)
        ratio = f"{med / statistics.median(samples[ref]):.2f}" if ref else "-"
        print(f"{name:<24} {med:>15.2f} {q[0]:>8.2f} {q[-1]:>8.2f} {ratio:>15}")
    print(
        f"\nmedian of per-round ratios, @reach_otel.tool / hand-written span: {statistics.median(ratios):.3f}"
    )
    agent_ratio = statistics.median(agent_ratios)
    print(f"median of per-round ratios, @reach_otel.agent / hand-written span: {agent_ratio:.3f}")
    print(f"rounds={args.rounds} calls/round={args.calls}")


if __name__ == "__main__":
    main()

"""A flood from several concurrent clients: the collector answers 429 with Retry-After instead of
growing without bound, and clients that honour it (the real OTLP exporter) get every span stored."""

from __future__ import annotations

import threading
from collections import Counter

import requests
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

CLIENTS = 4
BATCHES = 8
SPANS_PER_BATCH = 400


def make_spans(client: int) -> list:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("flood")
    for i in range(BATCHES * SPANS_PER_BATCH):
        with tracer.start_as_current_span(
            f"execute_tool lookup-{client}", attributes={"i": i, "client": client}
        ):
            pass
    return list(memory.get_finished_spans())


def test_flood_gets_429s_and_every_span_is_stored(start_collector) -> None:
    collector = start_collector(max_pending_spans=SPANS_PER_BATCH * 2)
    statuses: Counter[int] = Counter()
    results: list[SpanExportResult] = []
    lock = threading.Lock()
    spans = [make_spans(c) for c in range(CLIENTS)]

    def client(index: int) -> None:
        session = requests.Session()

        def count(response: requests.Response, *args: object, **kwargs: object) -> None:
            with lock:
                statuses[response.status_code] += 1

        session.hooks["response"].append(count)
        exporter = OTLPSpanExporter(endpoint=collector.url + "/v1/traces", session=session, timeout=60)
        mine = spans[index]
        for start in range(0, len(mine), SPANS_PER_BATCH):
            outcome = exporter.export(mine[start : start + SPANS_PER_BATCH])
            with lock:
                results.append(outcome)
        exporter.shutdown()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(180)

    assert all(r == SpanExportResult.SUCCESS for r in results), statuses
    assert len(results) == CLIENTS * BATCHES
    assert statuses[429] + statuses[503] > 0, statuses  # the collector pushed back
    assert set(statuses) <= {200, 429, 503}
    stored = collector.store.query("SELECT count(*) FROM spans WHERE name LIKE 'execute_tool lookup-%'")
    assert stored[0][0] == CLIENTS * BATCHES * SPANS_PER_BATCH

"""The collector dashboard: ingest rate, rejects, write queue depth and commit latency."""

from __future__ import annotations

from typing import Final

from build import Dashboard, Panel
from promql import histogram_quantile

COLLECTOR: Final = Dashboard(
    uid="reach-collector",
    title="reach-otel / Collector",
    description="The collector's own health: ingest rate, rejected spans, write queue and commit latency.",
    with_agent=False,
    panels=(
        Panel(
            "timeseries",
            "Ingest rate",
            "Spans received per second (OTLP over HTTP and gRPC), accepted "
            "or not. A drop to 0 while apps run means exporters cannot reach the collector.",
            [("sum(rate(reach_collector_spans_received_total[$__rate_interval]))", "received")],
            "cps",
        ),
        Panel(
            "timeseries",
            "Rejected spans",
            "Spans rejected at ingest per second (bad ids, timestamps) "
            "and their share of all received. Any steady rejection means an exporter sends broken data.",
            [
                ("sum(rate(reach_collector_spans_rejected_total[$__rate_interval]))", "rejected/s"),
                (
                    "sum(rate(reach_collector_spans_rejected_total[$__rate_interval])) / "
                    "sum(rate(reach_collector_spans_received_total[$__rate_interval]))",
                    "share",
                ),
            ],
            "short",
            (("green", None), ("red", 1.0)),
        ),
        Panel(
            "timeseries",
            "Write queue depth",
            "Spans accepted into memory but not yet committed to "
            "DuckDB. Near the queue bound (262 144 by default) ingest answers 429 and exporters back off.",
            [("sum(reach_collector_queue_spans)", "queued spans")],
            "short",
            (("green", None), ("orange", 100000.0), ("red", 200000.0)),
            min=0,
        ),
        Panel(
            "timeseries",
            "Write latency",
            "Commit time of one span batch (P50 / P99). A 200 is sent only "
            "after the commit, so slow commits are slow ingest; above 1 s the disk is the bottleneck.",
            [
                (
                    histogram_quantile(q, "reach_collector_write_seconds_bucket"),
                    f"P{int(q * 100)}",
                )
                for q in (0.5, 0.99)
            ],
            "s",
            (("green", None), ("orange", 0.25), ("red", 1.0)),
        ),
        Panel(
            "timeseries",
            "Commits per second",
            "Span batches committed per second. With steady ingest "
            "and fewer commits, batches are growing: the writer is falling behind.",
            [("sum(rate(reach_collector_write_seconds_count[$__rate_interval]))", "commits/s")],
            "ops",
        ),
        Panel(
            "stat",
            "Spans received (range)",
            "Spans received over the selected time range.",
            [("sum(increase(reach_collector_spans_received_total[$__range]))", "spans")],
            "short",
            (("blue", None),),
            instant=True,
        ),
    ),
)

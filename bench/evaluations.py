"""Evaluations benchmark (SPEC §18): what recording outcomes costs.

Ingest (the default): a real collector process on loopback takes OTLP/HTTP protobuf requests of
``--batch`` records each from one client, ``gen_ai.evaluation.result`` log records to ``/v1/logs``
and spans to ``/v1/traces`` alternately, round after round, each acknowledged only once durable;
records (or spans) per second side by side, medians over the rounds.

Quality (``--quality``): ``GET /api/metrics/quality`` computed in process over the diagnosis
benchmark's 10 M-span store (``bench/diagnosis.py``'s requests) with ``--evaluations`` evaluations
added, each on an agent span of the store and stamped a second after it ended: p50/p99 over a
15-minute and a 1-hour window, by agent, evaluation and model.

    python bench/evaluations.py [--batch 500] [--requests 40] [--rounds 5]
    python bench/evaluations.py --quality [--db PATH] [--evaluations 1000000] [--runs 30]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb
import httpx
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from reach_collector.query.evaluations import quality
from reach_otel import semconv as sc

sys.path.insert(0, str(Path(__file__).resolve().parent))
import diagnosis  # the 10 M-span store it builds
import metrics as spans_bench  # time_runs, served_store

PROTOBUF = {"content-type": "application/x-protobuf"}
WINDOWS = (("15m", 900.0), ("1h", 3600.0))


def _kv(key: str, value: Any) -> KeyValue:
    any_value = AnyValue(double_value=value) if isinstance(value, float) else AnyValue(string_value=value)
    return KeyValue(key=key, value=any_value)


def logs_body(n: int, first: int) -> bytes:
    """``n`` evaluation records, each on a span of its own trace."""
    request = ExportLogsServiceRequest()
    records = request.resource_logs.add().scope_logs.add().log_records
    now = time.time_ns()
    for i in range(first, first + n):
        record = records.add()
        record.time_unix_nano = now
        record.event_name = sc.GEN_AI_EVALUATION_RESULT
        record.trace_id = i.to_bytes(16, "big")
        record.span_id = (i + 1).to_bytes(8, "big")
        record.attributes.extend(
            [
                _kv(sc.GEN_AI_EVALUATION_NAME, "correctness"),
                _kv(sc.GEN_AI_EVALUATION_SCORE_VALUE, float(i % 2)),
                _kv(sc.GEN_AI_EVALUATION_SCORE_LABEL, "correct" if i % 2 else "incorrect"),
                _kv(sc.GEN_AI_EVALUATION_EXPLANATION, "the amount matches the invoice"),
            ]
        )
    body: bytes = request.SerializeToString()
    return body


def traces_body(n: int, first: int) -> bytes:
    """``n`` agent spans, each the root of its own trace, with as many attributes as a record."""
    request = ExportTraceServiceRequest()
    resource = request.resource_spans.add()
    resource.resource.attributes.append(_kv(sc.SERVICE_NAME, "bench"))
    spans = resource.scope_spans.add().spans
    now = time.time_ns()
    for i in range(first, first + n):
        span = spans.add()
        span.trace_id = i.to_bytes(16, "big")
        span.span_id = (i + 1).to_bytes(8, "big")
        span.name = "invoke_agent BillingAgent"
        span.start_time_unix_nano, span.end_time_unix_nano = now - 1_000_000, now
        span.attributes.extend(
            [
                _kv(sc.GEN_AI_OPERATION_NAME, sc.OP_AGENT),
                _kv(sc.GEN_AI_AGENT_NAME, "BillingAgent"),
                _kv(sc.GEN_AI_AGENT_ID, "billing-1"),
                _kv("app.answer", "the amount matches the invoice"),
            ]
        )
    body: bytes = request.SerializeToString()
    return body


def ingest(batch: int, requests: int, rounds: int) -> dict[str, list[float]]:
    """Records (spans) per second, per round, for logs and traces alternately."""
    from collector_process import CollectorProcess  # tests/ helper: a real collector process

    rates: dict[str, list[float]] = {"/v1/logs": [], "/v1/traces": []}
    with (
        tempfile.TemporaryDirectory() as folder,
        CollectorProcess(Path(folder) / "bench.duckdb") as collector,
    ):
        client = httpx.Client(base_url=collector.url, headers=PROTOBUF, timeout=60)
        first = 1
        for _ in range(rounds):
            for path, make in (("/v1/logs", logs_body), ("/v1/traces", traces_body)):
                bodies = [make(batch, first + k * batch) for k in range(requests)]
                first += requests * batch
                started = time.perf_counter()
                for body in bodies:
                    answer = client.post(path, content=body)
                    answer.raise_for_status()
                rates[path].append(batch * requests / (time.perf_counter() - started))
            print(f"  round {len(rates['/v1/logs'])}/{rounds}", file=sys.stderr)
    return rates


def add_evaluations(db: Path, n: int) -> int:
    """``n`` evaluations on agent spans of the store (one per span, sampled), once; returns how
    many the store holds."""
    con = duckdb.connect(str(db))
    try:
        have = con.execute("SELECT count(*) FROM evaluations").fetchall()[0][0]
        if have < n:
            con.execute(
                "INSERT INTO evaluations SELECT end_ns + 1000000000, trace_id, span_id, NULL, 'correctness',"
                " CAST(hash(span_id) % 2 AS DOUBLE), CASE WHEN hash(span_id) % 2 = 1 THEN 'correct'"
                " ELSE 'incorrect' END, 'bench', NULL, 'bench', 'log'"
                f" FROM (SELECT * FROM spans WHERE operation = '{sc.OP_AGENT}') USING SAMPLE {n - have} ROWS"
            )
        return int(con.execute("SELECT count(*) FROM evaluations").fetchall()[0][0])
    finally:
        con.close()


def quality_timing(db: Path, n_spans: int, evaluations: int, runs: int) -> dict[str, Any]:
    if not db.exists():
        print(f"building {n_spans:,} spans at {db} (minutes)", file=sys.stderr)
        diagnosis.build(db, n_spans)
    stored = add_evaluations(db, evaluations)
    now_ns = diagnosis._newest_end(db) + 1_000_000_000
    store = spans_bench.served_store(db)
    out: dict[str, Any] = {"spans": store.count_spans(), "evaluations": stored}
    try:
        for label, window_s in WINDOWS:
            for by in ("agent", "evaluation", "model"):
                body = quality(store, now_ns, window_s, by)
                seen = sum(g["evaluations"] for g in body["groups"])

                def run(w: float = window_s, b: str = by) -> object:
                    return quality(store, now_ns, w, b)

                out[f"{label} by {by} ({seen:,} in window)"] = spans_bench.time_runs(run, runs)
    finally:
        store.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quality", action="store_true", help="time /api/metrics/quality instead")
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--db", default=None, help="the 10 M-span store (built when missing, kept)")
    parser.add_argument("--spans", type=int, default=10_000_000)
    parser.add_argument("--evaluations", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    if args.quality:
        db = Path(args.db) if args.db else Path(tempfile.mkdtemp()) / "bench.duckdb"
        for key, value in quality_timing(db, args.spans, args.evaluations, args.runs).items():
            print(f"{key:<40} {value}")
        return 0
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    rates = ingest(args.batch, args.requests, args.rounds)
    logs, spans = statistics.median(rates["/v1/logs"]), statistics.median(rates["/v1/traces"])
    print(
        f"one client, {args.batch} records a request, {args.requests} requests a round, {args.rounds} rounds"
    )
    for path, what, median in (("/v1/logs", "evaluation records/s", logs), ("/v1/traces", "spans/s", spans)):
        print(f"{path:<11} {what:<21} median {median:>9,.0f}  rounds {[round(r) for r in rates[path]]}")
    print(f"logs / traces: {logs / spans:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

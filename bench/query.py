"""Trace query benchmark: trace-by-id latency (p50/p99) and searches, through the HTTP API of a
collector serving a DuckDB file that holds 1 M and 10 M multi-agent spans.

The stores are filled with DuckDB's Arrow insert (the ingest path is measured by bench/ingest.py),
10-span traces in time order, plus the trace lookup built with the writer's own statements
(parts, then compaction).

    python bench/query.py [--sizes 1000000 10000000] [--lookups 500]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from reach_collector.store.schema import ARROW_SCHEMA, COMPACT, DDL, PART_INSERT
from reach_otel import semconv as sc

AGENTS = ["TriageAgent", "BillingAgent", "TechSupportAgent", "RefundAgent", "WriterAgent"]
# One trace: (name, parent index, operation, agent, tool, model, tokens in/out, handoff target)
TEMPLATE = [
    ("invoke_workflow support_turn", -1, sc.OP_WORKFLOW, None, None, None, None, None, None),
    ("invoke_agent TriageAgent", 0, sc.OP_AGENT, "TriageAgent", None, None, 900, 120, None),
    ("chat fake-model", 1, sc.OP_CHAT, "TriageAgent", None, "fake-model", 900, 120, None),
    ("execute_tool lookup_account", 1, sc.OP_TOOL, "TriageAgent", "lookup_account", None, None, None, None),
    ("handoff {target}", 1, sc.OP_HANDOFF, "TriageAgent", None, None, None, None, "{target}"),
    ("invoke_agent {target}", 0, sc.OP_AGENT, "{target}", None, None, 900, 120, None),
    ("chat fake-model", 5, sc.OP_CHAT, "{target}", None, "fake-model", 900, 120, None),
    ("execute_tool query_invoice", 5, sc.OP_TOOL, "{target}", "query_invoice", None, None, None, None),
    ("chat fake-model", 5, sc.OP_CHAT, "{target}", None, "fake-model", 700, 90, None),
    ("execute_tool issue_refund", 5, sc.OP_TOOL, "{target}", "issue_refund", None, None, None, None),
]
SPANS_PER_TRACE = len(TEMPLATE)
RESOURCE = json.dumps({"service.name": "support-app", "service.version": "1.4.2", "host.name": "worker-3"})


def _attrs(
    op: str,
    agent: str | None,
    tool: str | None,
    model: str | None,
    tin: int | None,
    tout: int | None,
    target: str | None,
) -> str:
    attrs: dict[str, object] = {sc.GEN_AI_OPERATION_NAME: op}
    if agent:
        attrs[sc.GEN_AI_AGENT_NAME if op == sc.OP_AGENT else sc.REACH_AGENT_NAME] = agent
    if tool:
        attrs[sc.GEN_AI_TOOL_NAME] = tool
    if model:
        attrs.update({sc.GEN_AI_REQUEST_MODEL: model, sc.GEN_AI_PROVIDER_NAME: "local"})
    if tin is not None:
        attrs.update({sc.GEN_AI_USAGE_INPUT_TOKENS: tin, sc.GEN_AI_USAGE_OUTPUT_TOKENS: tout})
    if target:
        attrs.update(
            {
                sc.REACH_HANDOFF_SOURCE: agent,
                sc.REACH_HANDOFF_TARGET: target,
                sc.REACH_HANDOFF_STATUS: "committed",
                sc.REACH_HOP_COUNT: 1,
            }
        )
    return json.dumps(attrs)


def chunk(
    first_trace: int, n_traces: int, t0_ns: int, rng: np.random.Generator
) -> tuple[pa.Table, list[str]]:
    n = n_traces * SPANS_PER_TRACE
    trace_ids = [f"{first_trace + i + 1:032x}" for i in range(n_traces)]
    targets = rng.integers(1, len(AGENTS), n_traces)
    failed = rng.random(n_traces) < 0.03
    span_ids = rng.integers(1, 2**63 - 1, n, dtype=np.int64)
    span_hex = [f"{int(s):016x}" for s in span_ids]
    starts = t0_ns + (np.arange(n_traces, dtype=np.int64) + first_trace) * 1_000_000  # 1000 traces/s
    cols: dict[str, list[object]] = {name: [] for name in ARROW_SCHEMA.names}
    offsets = [0, 1, 2, 300, 400, 410, 411, 700, 710, 900]
    durations = [1000, 405, 250, 30, 1, 580, 250, 30, 150, 40]
    for i in range(n_traces):
        target = AGENTS[targets[i]]
        base = int(starts[i])
        for j, (name, parent, op, agent, tool, model, tin, tout, tgt) in enumerate(TEMPLATE):
            k = i * SPANS_PER_TRACE + j
            agent_v = agent.replace("{target}", target) if agent else None
            tgt_v = tgt.replace("{target}", target) if tgt else None
            error = bool(failed[i]) and j == 5
            start = base + offsets[j] * 1_000_000
            end = start + durations[j] * 1_000_000
            row = {
                "trace_id": trace_ids[i],
                "span_id": span_hex[k],
                "parent_span_id": span_hex[i * SPANS_PER_TRACE + parent] if parent >= 0 else None,
                "name": name.replace("{target}", target),
                "kind": 3 if op == sc.OP_CHAT else 1,
                "start_ns": start,
                "end_ns": end,
                "duration_ms": (end - start) / 1e6,
                "status_code": 2 if error else 0,
                "status_message": "agent failed" if error else "",
                "service": "support-app",
                "operation": op,
                "agent": agent_v,
                "tool": tool,
                "model": model,
                "provider": "local" if model else None,
                "input_tokens": tin,
                "output_tokens": tout,
                "handoff_source": agent_v if tgt_v else None,
                "handoff_target": tgt_v,
                "handoff_status": "committed" if tgt_v else None,
                "handoff_mode": "delegate" if tgt_v else None,
                "hop_count": 1 if tgt_v else None,
                "loop_detected": False if tgt_v else None,
                "error_type": "billing.InvoiceError" if error else None,
                "conversation_id": None,
                "trace_state": None,
                "flags": 1,
                "attributes": _attrs(op, agent_v, tool, model, tin, tout, tgt_v),
                "events": None,
                "links": None,
                "resource": RESOURCE,
                "scope": None,
            }
            for key, value in row.items():
                cols[key].append(value)
    return pa.Table.from_pydict(cols, schema=ARROW_SCHEMA), trace_ids


def build(db: Path, n_spans: int) -> tuple[list[str], float]:
    import duckdb

    con = duckdb.connect(str(db))
    for statement in DDL:
        con.execute(statement)
    rng = np.random.default_rng(5)
    n_traces = n_spans // SPANS_PER_TRACE
    t0 = time.time_ns() - n_traces * 1_000_000 - 60 * 10**9
    sample: list[str] = []
    started = time.perf_counter()
    step = 100_000
    for first in range(0, n_traces, step):
        table, ids = chunk(first, min(step, n_traces - first), t0, rng)
        sample.extend(random.Random(first).sample(ids, min(len(ids), 50)))
        con.register("reach_batch", table)
        con.execute("BEGIN TRANSACTION")
        con.execute("INSERT INTO spans SELECT * FROM reach_batch")
        con.execute(PART_INSERT.format(batch="reach_batch"))
        con.execute(COMPACT)  # what the writer does between commits
        con.execute("DELETE FROM trace_parts")
        con.execute("COMMIT")
        con.unregister("reach_batch")
    con.execute("CHECKPOINT")
    con.close()
    return sample, time.perf_counter() - started


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _timed_get(conn: http.client.HTTPConnection, path: str) -> float:
    started = time.perf_counter()
    conn.request("GET", path)
    response = conn.getresponse()
    body = response.read()
    elapsed = (time.perf_counter() - started) * 1000
    assert response.status == 200, (path, response.status, body[:200])
    return elapsed


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def measure(db: Path, ids: list[str], lookups: int) -> dict[str, float]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "reach_collector", "--db", str(db), "--port", str(port), "--grpc-port", "0"],
        stdout=subprocess.DEVNULL,
    )
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        deadline = time.monotonic() + 60
        while True:
            try:
                _timed_get(conn, "/healthz")
                break
            except (OSError, http.client.HTTPException):
                conn.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        rng = random.Random(9)
        for trace_id in rng.sample(ids, 20):  # warm-up
            _timed_get(conn, f"/api/traces/{trace_id}")
        by_id = [_timed_get(conn, f"/api/traces/{rng.choice(ids)}") for _ in range(lookups)]
        searches = {
            "search agent=BillingAgent limit=20": "/api/traces?agent=BillingAgent&limit=20",
            "search status=error since=15m": "/api/traces?status=error&since=15m&limit=20",
            "search attr.gen_ai.tool.name=issue_refund since=5m": (
                f"/api/traces?attr.{sc.GEN_AI_TOOL_NAME}=issue_refund&since=5m&limit=20"
            ),
        }
        out = {"trace-by-id p50 ms": _pct(by_id, 50), "trace-by-id p99 ms": _pct(by_id, 99)}
        for label, path in searches.items():
            times = [_timed_get(conn, path) for _ in range(15)]
            out[label + " p50 ms"] = _pct(times, 50)
        return out
    finally:
        proc.terminate()
        proc.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--lookups", type=int, default=500)
    parser.add_argument("--dir", default=None, help="where to build the stores (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for size in args.sizes:
            db = Path(tmp) / f"q{size}.duckdb"
            ids, build_s = build(db, size)
            mb = os.path.getsize(db) / 2**20
            print(f"{size:,} spans: built in {build_s:.0f}s, {mb:,.0f} MiB")
            for label, value in measure(db, ids, args.lookups).items():
                print(f"  {label}: {value:.1f}")
            db.unlink()


if __name__ == "__main__":
    main()

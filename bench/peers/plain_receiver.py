"""The naïve peer: a plain FastAPI + DuckDB OTLP/HTTP receiver, written the straightforward way.

``POST /v1/traces`` parses the protobuf with opentelemetry-proto, loops the spans in Python into
per-column lists, inserts them as one Arrow table (or, with ``--insert executemany``, row by row
with ``executemany``) into a DuckDB file, commits and answers 200.
``GET /api/traces/{trace_id}`` is ``SELECT ... WHERE trace_id = ?`` (no index, no lookup table).
Used by ``bench/peers/compare.py``; runs on its own as

    python bench/peers/plain_receiver.py --db FILE --port PORT [--insert arrow|executemany]
"""

from __future__ import annotations

import argparse
import json
import threading
from typing import Any

import duckdb
import pyarrow as pa
import uvicorn
from fastapi import FastAPI, HTTPException, Request, Response
from fastapi.concurrency import run_in_threadpool
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

DDL = """
CREATE TABLE IF NOT EXISTS spans (
    trace_id VARCHAR, span_id VARCHAR, parent_span_id VARCHAR, name VARCHAR, kind INTEGER,
    start_ns BIGINT, end_ns BIGINT, status_code INTEGER, status_message VARCHAR,
    service VARCHAR, attributes JSON, resource JSON
)
"""
COLUMNS = [
    "trace_id",
    "span_id",
    "parent_span_id",
    "name",
    "kind",
    "start_ns",
    "end_ns",
    "status_code",
    "status_message",
    "service",
    "attributes",
    "resource",
]
INSERT_ROW = f"INSERT INTO spans VALUES ({', '.join('?' * len(COLUMNS))})"
ARROW_SCHEMA = pa.schema(
    [
        ("trace_id", pa.string()),
        ("span_id", pa.string()),
        ("parent_span_id", pa.string()),
        ("name", pa.string()),
        ("kind", pa.int32()),
        ("start_ns", pa.int64()),
        ("end_ns", pa.int64()),
        ("status_code", pa.int32()),
        ("status_message", pa.string()),
        ("service", pa.string()),
        ("attributes", pa.string()),
        ("resource", pa.string()),
    ]
)


def value(v: AnyValue) -> Any:
    """An OTLP AnyValue as a plain Python value."""
    which = v.WhichOneof("value")
    if which == "array_value":
        return [value(item) for item in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: value(kv.value) for kv in v.kvlist_value.values}
    if which == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, which) if which else None


def rows(body: bytes) -> dict[str, list[Any]]:
    """Decode one ExportTraceServiceRequest into per-column lists."""
    req = ExportTraceServiceRequest()
    req.ParseFromString(body)
    cols: dict[str, list[Any]] = {name: [] for name in COLUMNS}
    for rs in req.resource_spans:
        resource = {kv.key: value(kv.value) for kv in rs.resource.attributes}
        resource_json = json.dumps(resource)
        service = str(resource.get("service.name", "unknown"))
        for ss in rs.scope_spans:
            for span in ss.spans:
                cols["trace_id"].append(span.trace_id.hex())
                cols["span_id"].append(span.span_id.hex())
                cols["parent_span_id"].append(span.parent_span_id.hex() or None)
                cols["name"].append(span.name)
                cols["kind"].append(span.kind)
                cols["start_ns"].append(span.start_time_unix_nano)
                cols["end_ns"].append(span.end_time_unix_nano)
                cols["status_code"].append(span.status.code)
                cols["status_message"].append(span.status.message)
                cols["service"].append(service)
                cols["attributes"].append(json.dumps({kv.key: value(kv.value) for kv in span.attributes}))
                cols["resource"].append(resource_json)
    return cols


def create_app(db: str, insert: str = "arrow") -> FastAPI:
    app = FastAPI()
    con = duckdb.connect(db)
    con.execute(DDL)
    local = threading.local()

    def cursor() -> duckdb.DuckDBPyConnection:
        if not hasattr(local, "cur"):
            local.cur = con.cursor()
        cur: duckdb.DuckDBPyConnection = local.cur  # threading.local's attributes are Any
        return cur

    def store(body: bytes) -> None:
        cols = rows(body)
        cur = cursor()
        cur.execute("BEGIN TRANSACTION")
        if insert == "executemany":
            cur.executemany(INSERT_ROW, list(zip(*cols.values(), strict=True)))
        else:
            batch = pa.table(cols, schema=ARROW_SCHEMA)  # noqa: F841 - read by DuckDB's replacement scan
            cur.execute("INSERT INTO spans SELECT * FROM batch")
        cur.execute("COMMIT")

    def trace(trace_id: str) -> list[dict[str, Any]]:
        result = cursor().execute(
            "SELECT * FROM spans WHERE trace_id = ? ORDER BY start_ns", [trace_id.lower()]
        )
        return [dict(zip(COLUMNS, row, strict=True)) for row in result.fetchall()]

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/v1/traces")
    async def traces(request: Request) -> Response:
        body = await request.body()
        try:
            await run_in_threadpool(store, body)
        except Exception as exc:  # a decode error is the client's fault, anything else ours
            status = 400 if "DecodeError" in type(exc).__name__ else 500
            raise HTTPException(status, str(exc)) from None
        return Response(ExportTraceServiceResponse().SerializeToString(), media_type="application/x-protobuf")

    @app.get("/api/traces/{trace_id}")
    def get_trace(trace_id: str) -> dict[str, Any]:
        spans = trace(trace_id)
        if not spans:
            raise HTTPException(404, "trace not found")
        return {"trace_id": trace_id, "spans": spans}

    app.state.con = con
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--insert", choices=["arrow", "executemany"], default="arrow")
    args = parser.parse_args()
    app = create_app(args.db, args.insert)
    try:
        uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")
    finally:
        app.state.con.close()


if __name__ == "__main__":
    main()

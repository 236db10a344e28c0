"""The per-trace summary is declared once (store.summary) and every implementation follows it: the
DuckDB lookup tables and their SQL, the ClickHouse aggregate states, the decoder's Python fold and
the compiled one. For the same random spans, split into batches and commits at random, all of them
give the same summary of every trace."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from ch_collectors import ENGINES, engine_store
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from reach_collector.ingest import fast
from reach_collector.ingest.decode import PROTOBUF, parse_for_rows
from reach_collector.ingest.pool import start_pool
from reach_collector.ingest.rows import SpanBatch, flatten
from reach_collector.ingest.service import IngestService
from reach_collector.ingest.writer import Writer
from reach_collector.store import schema, summary
from reach_collector.store.base import TraceFilter
from reach_collector.store.clickhouse import ClickHouseStore
from reach_collector.store.clickhouse.schema import TRACE_AGGREGATES
from reach_collector.store.duckdb_store import DuckDBStore
from reach_otel import semconv as sc

BASE_NS = 1_700_000_000_000_000_000
OPERATIONS = (sc.OP_AGENT, sc.OP_HANDOFF, sc.OP_CHAT, sc.OP_TOOL, None)
AGENTS = ("Triage", "Billing", "", None)
SERVICES = ("support-app", "billing-svc", None)
# How each kind's aggregate is named on ClickHouse (without its If combinator).
CLICKHOUSE_FUNCTION = {
    "min": "min",
    "max": "max",
    "arg_min": "argMin",
    "count": "count",
    "set": "groupUniqArray",
}


def _requests(seed: int, traces: int = 12, spans: int = 240) -> list[bytes]:
    """Random spans of ``traces`` traces (roots, orphans, errors, agent runs with and without a
    name, handoffs, spans with and without a service) over several requests; every start time
    distinct, so "the earliest" is one span everywhere."""
    rng = random.Random(seed)
    trace_ids = [rng.randbytes(16) for _ in range(traces)]
    starts = rng.sample(range(10_000_000), spans)
    requests = []
    cut = sorted(rng.sample(range(1, spans), 5))
    for lo, hi in zip([0, *cut], [*cut, spans], strict=True):
        req = ExportTraceServiceRequest()
        for i in range(lo, hi):
            service = rng.choice(SERVICES)
            rs = req.resource_spans.add()
            if service is not None:
                kv = rs.resource.attributes.add()
                kv.key, kv.value.string_value = sc.SERVICE_NAME, service
            span = rs.scope_spans.add().spans.add()
            span.trace_id = rng.choice(trace_ids)
            span.span_id = rng.randbytes(7) + b"\x01"
            if rng.random() < 0.6:
                span.parent_span_id = rng.randbytes(7) + b"\x02"
            span.name = f"span-{i}"
            span.start_time_unix_nano = BASE_NS + starts[i] * 1000
            span.end_time_unix_nano = span.start_time_unix_nano + rng.randrange(10**9)
            span.status.code = rng.choice((0, 1, 2))
            for key, value in (
                (sc.GEN_AI_OPERATION_NAME, rng.choice(OPERATIONS)),
                (sc.GEN_AI_AGENT_NAME, rng.choice(AGENTS)),
            ):
                if value is not None:
                    kv = span.attributes.add()
                    kv.key, kv.value.string_value = key, value
        requests.append(req.SerializeToString())
    return requests


def _by_trace(rows: list[dict[str, Any]] | list[tuple[Any, ...]]) -> dict[str, dict[str, Any]]:
    out = {}
    for row in rows:
        values = dict(zip(schema.TRACE_COLUMNS, row, strict=True)) if isinstance(row, tuple) else dict(row)
        for c in summary.SUMMARY:
            if c.kind == "set":
                values[c.name] = sorted(values[c.name])
        out[values.pop("trace_id")] = values
    return out


def _duckdb_merged(store: DuckDBStore) -> dict[str, dict[str, Any]]:
    cols = ", ".join(schema.TRACE_COLUMNS)
    return _by_trace(
        store.query(
            f"SELECT {schema.MERGED} FROM (SELECT {cols} FROM traces"
            f" UNION ALL SELECT {cols} FROM trace_parts) GROUP BY trace_id"
        )
    )


def _clickhouse_merged(store: ClickHouseStore) -> dict[str, dict[str, Any]]:
    names = [name for name, _, _, _ in TRACE_AGGREGATES]
    merged = ", ".join(f"{merge}({name})" for name, _, _, merge in TRACE_AGGREGATES)
    rows = store.query(f"SELECT trace_id, {merged} FROM traces GROUP BY trace_id")
    out = []
    for tid, *values in rows:
        got = dict(zip(names, values, strict=True))
        row: dict[str, Any] = {"trace_id": tid}
        for c in summary.SUMMARY:
            value = got[c.name]
            if c.when is not None and c.when.presence and not got[c.when.presence]:
                value = None  # no span met the condition: the state's default means none
            row[c.name] = list(value) if c.kind == "set" else value
        out.append(row)
    return _by_trace(out)


@pytest.fixture(params=ENGINES)
def clickhouse(request: pytest.FixtureRequest, tmp_path: Path, ch_database: str) -> Iterator[ClickHouseStore]:
    store = engine_store(request, tmp_path, ch_database)
    yield store
    store.close()


def test_every_store_declares_the_summary_as_declared(tmp_path: Path, clickhouse: ClickHouseStore) -> None:
    """Each summary column is a column of DuckDB's two lookup tables, of the decoder's parts and of
    ClickHouse's lookup (an aggregate state of the same function, with a condition exactly when
    the declaration has one), in declaration order."""
    duck = DuckDBStore(tmp_path / "t.duckdb")
    try:
        for table in ("traces", "trace_parts"):
            cols = duck.query(
                "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ?"
                " ORDER BY column_index",
                [table],
            )
            got = [(n, t) for n, t in cols if n not in ("trace_id", "trace_key")]
            assert got == [(c.name, summary.duckdb_type(c)) for c in summary.SUMMARY], table
    finally:
        duck.close()
    assert schema.PARTS_ARROW_SCHEMA.names == ["trace_id", *summary.SUMMARY_NAMES]
    assert len(summary.new_part()) == len(summary.SUMMARY)
    types = dict(
        clickhouse.query(
            "SELECT name, type FROM system.columns WHERE database = ? AND table = 'traces'",
            [clickhouse.layout.database],
        )
    )
    for c in summary.SUMMARY:
        fn = CLICKHOUSE_FUNCTION[c.kind] + ("If" if c.when is not None else "")
        assert types[c.name].replace(" ", "").startswith(f"AggregateFunction({fn},") or types[c.name] == (
            f"AggregateFunction({fn})"
        ), (c.name, types[c.name])
        if c.when is not None and c.when.presence:
            assert types[c.when.presence] == "AggregateFunction(countIf, UInt8)"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_implementation_gives_the_same_summaries(
    tmp_path: Path, clickhouse: ClickHouseStore, seed: int
) -> None:
    rng = random.Random(seed)
    batches: list[SpanBatch] = []
    for body in _requests(seed):
        batch = flatten(parse_for_rows(body, PROTOBUF))
        compiled = fast.flatten_protobuf(body)
        if compiled is not None:  # the compiled fold gives the Python fold's parts
            assert compiled.parts.to_pylist() == batch.parts.to_pylist()
        batches.append(batch)
    spans = pa.concat_tables([b.table for b in batches])

    # The Python fold over every span at once: what each store must give whatever the batches.
    whole: dict[str, list[Any]] = {}
    for row in zip(*(spans.column(name).to_pylist() for name in schema.SPAN_NAMES), strict=True):
        summary.fold(whole, row)
    want = _by_trace([(tid, *values) for tid, values in whole.items()])
    assert len(want) > 1

    duck = DuckDBStore(tmp_path / "t.duckdb", compact_rows=10**9)
    try:
        for batch in batches:
            duck.write(batch.table, batch.parts)
            clickhouse.write(batch.table, batch.parts)
            if rng.random() < 0.5:
                duck.compact()  # some parts folded into `traces` (the upsert), some not yet
        assert _duckdb_merged(duck) == want
        duck.compact()
        assert _duckdb_merged(duck) == want
        # The same summaries computed in SQL from the stored spans.
        duck._con.execute("DELETE FROM trace_parts")
        duck._con.execute("DELETE FROM traces")
        reach_batch = duck._con.sql("SELECT * FROM spans")  # noqa: F841 (read by the SQL below)
        duck._con.execute(schema.PART_INSERT.format(batch="reach_batch"))
        assert _duckdb_merged(duck) == want
    finally:
        duck.close()
    assert _clickhouse_merged(clickhouse) == want


def test_the_decoder_builds_no_parts_for_a_store_that_computes_them() -> None:
    """ClickHouse computes the summaries from the span rows (its materialized view), so it declares
    so; for such a store both decoders leave the parts empty and the rows as they are."""
    assert ClickHouseStore.write_profile.computes_summary
    assert not DuckDBStore.write_profile.computes_summary
    for body in _requests(4):
        want = flatten(parse_for_rows(body, PROTOBUF))
        got = [flatten(parse_for_rows(body, PROTOBUF), parts=False)]
        compiled = fast.flatten_protobuf(body, parts=False)
        if fast.enabled():
            assert compiled is not None
            got.append(compiled)
        for batch in got:
            assert batch.parts.schema == schema.PARTS_ARROW_SCHEMA and batch.parts.num_rows == 0
            assert batch.table.to_pylist() == want.table.to_pylist() and batch.stats == want.stats


def test_the_compiled_decoder_keeps_the_summary_it_was_given() -> None:
    """The compiled decoder folds by the declaration it was configured with (fast.SUMMARY), fixed
    once like the rest of its configuration: another summary is refused, not mixed in."""
    from reach_collector.ingest.fast import _fastflat  # type: ignore[attr-defined]

    if _fastflat is None:
        pytest.skip("the compiled decoder is not built")
    assert summary.compiled() == fast.SUMMARY
    assert _fastflat.configure(*fast.CONFIGURATION, fast.SUMMARY) is None
    with pytest.raises(RuntimeError, match="already configured"):
        _fastflat.configure(*fast.CONFIGURATION, fast.SUMMARY[:-1])
    with pytest.raises(ValueError):  # a fold it does not have
        _fastflat.configure(*fast.CONFIGURATION, ((9, -1, -1, ()),))


@pytest.mark.parametrize("engine", ["duckdb", "chdb"])
def test_the_ingest_path_builds_parts_only_for_a_store_that_takes_them(
    tmp_path: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every decoding path of the ingest service (the compiled one, the reference in a thread and
    in the worker pool, HTTP and gRPC) builds the parts for DuckDB and none for ClickHouse, as the
    store declares; the searches answer the same either way."""
    if engine == "chdb":
        pytest.importorskip("chdb")
    store: DuckDBStore | ClickHouseStore = (
        DuckDBStore() if engine == "duckdb" else ClickHouseStore.in_process(tmp_path / "chdb")
    )
    writer = Writer(store)
    pool = start_pool(1)
    try:
        service = IngestService(writer, max_body_bytes=1 << 24, pool=pool)
        bodies = _requests(6)
        batches = []
        for pure in ("0", "1"):  # the compiled path, then the reference (in a thread, in the pool)
            monkeypatch.setenv("REACH_COLLECTOR_PURE_PYTHON", pure)
            for body in bodies[:2]:
                batches.append(asyncio.run(service.decode_async(body, PROTOBUF, None)))
                batches.append(service.decode_pooled(ExportTraceServiceRequest.FromString(body)))
                batches.append(service.decode_http(body, PROTOBUF, None))
                batches.append(service.flatten(ExportTraceServiceRequest.FromString(body)))
        assert all(b.accepted for b in batches)
        assert [b.parts.num_rows > 0 for b in batches] == [engine == "duckdb"] * len(batches)
        for body in bodies:
            done = service.submit(service.decode_http(body, PROTOBUF, None))
            assert done is not None
            done.result(60)
        found = store.search(TraceFilter(limit=100))
        spans = pa.concat_tables([flatten(parse_for_rows(b, PROTOBUF)).table for b in bodies])
        assert len(found) == len(set(spans.column("trace_id").to_pylist()))
        assert sum(t["span_count"] for t in found) == spans.num_rows
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        writer.close()
        store.close()

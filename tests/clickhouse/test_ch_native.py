"""The span insert in ClickHouse's Native format (store.clickhouse.native): byte for byte what
clickhouse-driver's own columnar insert writes for the same rows (the lists ``convert`` builds) —
realistic batches from both decoders, NULLs where the column is not Nullable, every length a
LEB128 prefix changes size at, sliced and chunked columns — the same rows stored on a real 18.16
server as through the driver's lists, and a server whose columns differ refused, nothing written."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import pyarrow as pa
import pytest
from ch_server import ClickHouseServer
from ch_spans import decoded, make_request

from reach_collector.ingest.decode import PROTOBUF, parse
from reach_collector.ingest.rows import flatten
from reach_collector.store.clickhouse import ClickHouseStore
from reach_collector.store.clickhouse.convert import insert_columns
from reach_collector.store.clickhouse.driver import StoreError
from reach_collector.store.clickhouse.native import NativeBlock, encode_strings, span_block
from reach_collector.store.clickhouse.schema import INSERT_COLUMNS, KV_COLUMNS, SPAN_TYPES
from reach_collector.store.schema import ARROW_SCHEMA

_TYPES = [*SPAN_TYPES.values(), *(kind for _, kind in KV_COLUMNS)]


def _driver_bytes(name: str, kind: str, items: list[Any]) -> bytes:
    """What clickhouse-driver itself writes on the wire for one column of an insert."""
    from clickhouse_driver.bufferedwriter import BufferedSocketWriter
    from clickhouse_driver.columns.service import write_column
    from clickhouse_driver.context import Context

    ours, theirs = socket.socketpair()
    received = bytearray()

    def read() -> None:
        while chunk := theirs.recv(1 << 20):
            received.extend(chunk)

    reader = threading.Thread(target=read)
    reader.start()
    context = Context()
    context.client_settings = {"strings_as_bytes": False, "use_numpy": False}
    out = BufferedSocketWriter(ours, 1 << 16)
    write_column(context, name, kind, items, out)
    out.flush()
    ours.shutdown(socket.SHUT_WR)
    reader.join(10)
    ours.close()
    theirs.close()
    return bytes(received)


def _assert_as_the_driver_writes(table: pa.Table) -> None:
    block = span_block(table)
    assert block.rows == table.num_rows
    assert [(n, k) for n, k, _ in block.columns] == list(zip(INSERT_COLUMNS, _TYPES, strict=True))
    for (name, kind, data), items in zip(block.columns, insert_columns(table), strict=True):
        assert data == _driver_bytes(name, kind, items), name


@pytest.mark.parametrize("decoder", ["compiled", "python"])
def test_realistic_batches_are_the_bytes_the_driver_writes(decoder: str) -> None:
    batch = decoded(make_request(time.time_ns(), traces=30, exotic=decoder == "python")[0], decoder)
    _assert_as_the_driver_writes(batch.table)
    _assert_as_the_driver_writes(batch.table.slice(7, 40))  # an offset into every buffer
    halves = pa.concat_tables([batch.table.slice(0, 20), batch.table.slice(20)])  # two chunks a column
    assert halves.column("name").num_chunks == 2
    _assert_as_the_driver_writes(halves)


def _table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.table(
        {f.name: pa.array([r.get(f.name) for r in rows], f.type) for f in ARROW_SCHEMA}, ARROW_SCHEMA
    )


def test_nulls_lengths_and_text_the_driver_writes_alike() -> None:
    # LEB128 takes one more byte at 2^7, 2^14 and 2^21 bytes.
    lengths = [0, 1, 127, 128, 129, 16_383, 16_384, 2**21 - 1, 2**21]
    rows: list[dict[str, Any]] = [
        {"name": "x" * n, "trace_id": "é😀\x00" * (n // 7), "status_message": None, "events": "y" * n}
        for n in lengths
    ]
    rows += [
        {},  # every column NULL, the ones that are not Nullable too
        {
            "kind": 5,
            "start_ns": -(2**63),
            "end_ns": 2**63 - 1,
            "duration_ms": float("nan"),
            "flags": 2**32 - 1,
            "hop_count": -(2**31),
            "input_tokens": 2**63 - 1,
            "loop_detected": True,
            "attributes": '{"a":"é","n":null,"i":-3,"f":1e21,"b":false,"l":["x","\\u001f"],"o":{"k":[1]}}',
            "resource": '{"service.name":"s","host":"h"}',
        },
        {"attributes": "not json", "resource": "[1,2]", "loop_detected": False, "hop_count": 0},
        {"attributes": "{}", "resource": '{"service.name":"s","host":"h"}'},
    ]
    _assert_as_the_driver_writes(_table(rows))
    _assert_as_the_driver_writes(_table(rows).slice(9))
    _assert_as_the_driver_writes(_table([]))


def test_string_columns_of_any_arrow_string_type() -> None:
    values = ["", "a", "é" * 100, None, "z" * 300]
    expected = _driver_bytes("c", "String", [v or "" for v in values])
    for kind in (pa.string(), pa.large_string(), pa.binary()):
        raw = [v.encode() if v is not None and kind == pa.binary() else v for v in values]
        assert encode_strings(pa.array(raw, kind)) == expected, kind


def _dump(server: ClickHouseServer, database: str) -> list[tuple[Any, ...]]:
    names = ", ".join(INSERT_COLUMNS)
    return list(server.execute(f"SELECT {names} FROM {database}.spans ORDER BY trace_id, span_id"))


def test_stored_as_through_the_drivers_own_lists(clickhouse: ClickHouseServer, ch_database: str) -> None:
    body, ids = make_request(time.time_ns(), traces=40, seed=5, exotic=True)
    table = flatten(parse(body, PROTOBUF)).table
    native, lists = (
        ClickHouseStore(clickhouse.url(ch_database)),
        ClickHouseStore(clickhouse.url(ch_database + "_l")),
    )
    try:
        native.write(table, None)  # type: ignore[arg-type]
        lists._backend.insert("spans", INSERT_COLUMNS, insert_columns(table), _TYPES)
        stored = _dump(clickhouse, ch_database)
        assert len(stored) == table.num_rows
        assert stored == _dump(clickhouse, ch_database + "_l")
        for tid in ids:  # the lookup the view fills in the same insert
            assert native.trace_spans(tid) == lists.trace_spans(tid)
            assert native.trace_spans(tid)
    finally:
        native.close()
        lists.close()


def test_a_server_with_other_columns_is_refused_and_nothing_written(
    clickhouse: ClickHouseServer, ch_database: str
) -> None:
    store = ClickHouseStore(clickhouse.url(ch_database))
    try:
        clickhouse.execute(f"ALTER TABLE {ch_database}.spans MODIFY COLUMN kind UInt16")
        body, _ = make_request(time.time_ns(), traces=3)
        table = flatten(parse(body, PROTOBUF)).table
        with pytest.raises(StoreError, match="not the ones this collector writes"):
            store.write(table, None)  # type: ignore[arg-type]
        assert store.count_spans() == 0  # and the connection still answers
        clickhouse.execute(f"ALTER TABLE {ch_database}.spans MODIFY COLUMN kind UInt8")
        store.write(table, None)  # type: ignore[arg-type]
        assert store.count_spans() == table.num_rows
    finally:
        store.close()


def test_a_block_is_a_tuple_the_driver_takes_as_an_insert() -> None:
    block = span_block(_table([{"name": "n"}]))
    assert isinstance(block, tuple) and isinstance(block, NativeBlock)

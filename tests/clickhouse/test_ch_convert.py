"""The attribute key/value arrays hold, for every key, what DuckDB's ``json_extract_string``
returns for it — checked value by value against DuckDB, on the JSON both decoders write and on
random values (doubles of every magnitude, control characters, nesting)."""

from __future__ import annotations

import json
import random
import struct
import time

import duckdb
import orjson
import pytest
from ch_spans import decoded, make_request

from reach_collector.ingest.decode import PROTOBUF, parse
from reach_collector.ingest.rows import flatten
from reach_collector.store.clickhouse.convert import insert_columns, key_values
from reach_collector.store.clickhouse.schema import INSERT_COLUMNS, SPAN_TYPES
from reach_collector.store.duckdb_store import _json_path


def _duckdb_values(texts: list[str]) -> list[dict[str, str]]:
    """key → json_extract_string(text, key), NULLs left out, for each text (DuckDB itself)."""
    con = duckdb.connect()
    out = []
    for text in texts:
        keys = list(json.loads(text)) if text else []
        got = {}
        for key in keys:
            (value,) = con.execute("SELECT json_extract_string(?, ?)", [text, _json_path(key)]).fetchone()
            if value is not None:
                got[key] = value
        out.append(got)
    return out


def _ours(texts: list[str]) -> list[dict[str, str]]:
    out = []
    for text in texts:
        keys, values = key_values(text)
        assert len(keys) == len(values)
        out.append(dict(zip(keys, values, strict=True)))
    return out


@pytest.mark.parametrize("decoder", ["compiled", "python"])
def test_decoded_attributes_match_duckdb(decoder: str) -> None:
    batch = decoded(make_request(time.time_ns(), traces=8, exotic=decoder == "python")[0], decoder)
    for column in ("attributes", "resource"):
        texts = batch.table.column(column).to_pylist()
        assert _ours(texts) == _duckdb_values(texts)


def _random_value(rng: random.Random, depth: int = 0) -> object:
    kind = rng.randrange(8 if depth < 2 else 6)
    if kind == 0:
        return "".join(
            rng.choice(["a", "é", "\x01", "\x1f", '"', "\\", "/", "\u2028", "😀", "\n"]) for _ in range(5)
        )
    if kind == 1:
        return rng.randrange(-(2**63), 2**63)
    if kind == 2:
        return rng.uniform(1, 10) * 10.0 ** rng.randrange(-30, 30) * rng.choice([1, -1])
    if kind == 3:
        bits = struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0]
        return bits if bits == bits and abs(bits) != float("inf") else 0.5
    if kind == 4:
        return rng.choice([True, False, None])
    if kind == 5:
        return rng.choice([1e21, 1e20, 1e-7, 1e-6, 0.0, -0.0, 100.0, 5e-324])
    if kind == 6:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {f"k{i}\x02": _random_value(rng, depth + 1) for i in range(rng.randrange(3))}


def test_random_values_match_duckdb() -> None:
    rng = random.Random(11)
    texts = [orjson.dumps({f"key.{i}": _random_value(rng) for i in range(6)}).decode() for _ in range(400)]
    # The compiled decoder writes doubles with an exponent sign (1e+21): the same values.
    texts.append('{"a":1e+21,"b":1.5e-07,"c":100000000000000000000.0,"d":[1e+21,-0.0]}')
    assert _ours(texts) == _duckdb_values(texts)


def test_columns_follow_the_insert_order() -> None:
    body, _ = make_request(time.time_ns(), traces=3)
    table = flatten(parse(body, PROTOBUF)).table
    columns = insert_columns(table)
    assert len(columns) == len(INSERT_COLUMNS)
    for name, values in zip(INSERT_COLUMNS, columns, strict=False):
        if name in SPAN_TYPES:
            assert values == table.column(name).to_pylist(), name
    keys, values = columns[INSERT_COLUMNS.index("attr_keys")], columns[INSERT_COLUMNS.index("attr_values")]
    assert [len(k) for k in keys] == [len(v) for v in values]
    assert all("app.none" not in k for k in keys)  # JSON null: absent, as json_extract_string says

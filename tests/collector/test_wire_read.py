"""The faster wire read gives exactly what the official OTLP classes give."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from reach_collector.api.tempo_otlp import set_any
from reach_collector.ingest import wire
from reach_collector.ingest.batch_stats import stats_of
from reach_collector.ingest.decode import PROTOBUF, UndecodableBody, parse, parse_for_rows
from reach_collector.ingest.rows import flatten

scalars = st.one_of(
    st.text(max_size=300),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.binary(max_size=200),
    st.none(),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)


def _set(target: AnyValue, value: Any) -> None:
    # The collector's own value → AnyValue (as the Tempo API re-encodes stored attributes), plus bytes.
    if isinstance(value, bytes):
        target.bytes_value = value
    else:
        set_any(target, value)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


@given(values)
@settings(max_examples=400, deadline=None)
def test_every_any_value_decodes_like_the_official_message(value: Any) -> None:
    message = AnyValue()
    _set(message, value)
    official = wire.any_value(message)
    fast = wire.decode_value(message.SerializeToString())
    assert _same(fast, official) or fast == official


@given(st.dictionaries(st.text(max_size=20), scalars, max_size=12))
@settings(max_examples=150, deadline=None)
def test_span_attributes_read_through_the_wire_types_match(attrs: dict[str, Any]) -> None:
    span = Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="s")
    for key, value in attrs.items():
        _set(span.attributes.add(key=key).value, value)
    official = {kv.key: wire.any_value(kv.value) for kv in span.attributes}
    read = (
        wire.WireRequest.FromString(_request_with(span).SerializeToString())
        .resource_spans[0]
        .scope_spans[0]
        .spans[0]
    )
    fast = wire.attributes(read.attributes)
    assert fast.keys() == official.keys()
    assert all(_same(fast[k], official[k]) or fast[k] == official[k] for k in official)


def _request_with(span: Span) -> Any:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    request.resource_spans.add().scope_spans.add().spans.append(span)
    return request


def test_flatten_gives_the_same_rows_from_either_read() -> None:
    span = Span(
        trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="s", start_time_unix_nano=1, end_time_unix_nano=5
    )
    _set(span.attributes.add(key="gen_ai.operation.name").value, "chat")
    _set(span.attributes.add(key="gen_ai.usage.input_tokens").value, 300)
    _set(span.attributes.add(key="long").value, "x" * 1000)
    _set(span.attributes.add(key="nested").value, {"a": [1, 2.5, None]})
    event = span.events.add(name="exception", time_unix_nano=3)
    event.attributes.append(KeyValue(key="exception.type", value=AnyValue(string_value="KeyError")))
    body = _request_with(span).SerializeToString()
    official = flatten(parse(body, PROTOBUF)).table.to_pylist()
    batch = flatten(parse_for_rows(body, PROTOBUF))
    assert batch.table.to_pylist() == official
    # The exposition stats the worker folds in while building rows are those of the rows.
    assert batch.stats == stats_of(zip(*(c.to_pylist() for c in batch.table.columns), strict=True))
    assert batch.stats.calls and batch.stats.tokens == {(None, None): [300, 0]}


def test_invalid_utf8_in_a_value_is_an_undecodable_body() -> None:
    span = Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="s")
    span.attributes.add(key="k").value.bytes_value = b"\xff\xfe"
    # Rewrite the AnyValue's bytes_value tag (field 7) into string_value (field 1): invalid UTF-8.
    body = _request_with(span).SerializeToString().replace(b"\x3a\x02\xff\xfe", b"\x0a\x02\xff\xfe")
    with pytest.raises(UndecodableBody):
        parse(body, PROTOBUF)
    with pytest.raises(ValueError):
        flatten(parse_for_rows(body, PROTOBUF))


def test_attributes_keep_the_senders_order() -> None:
    span = Span(
        trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="s", start_time_unix_nano=1, end_time_unix_nano=2
    )
    keys = [f"key.{i}.{c}" for i, c in enumerate("zyxwvutsrqponmlkjihgfedcba")]
    for i, key in enumerate(keys):
        _set(span.attributes.add(key=key).value, "x" * 200 if i % 5 == 0 else i)  # long and short values
    batch = flatten(parse_for_rows(_request_with(span).SerializeToString(), PROTOBUF))
    assert list(json.loads(batch.table.column("attributes")[0].as_py())) == keys

"""The compiled decoder reads the wire exactly as protobuf's own parser does, and stays safe.

Every wire rule here is checked against the real parser (``ExportTraceServiceRequest.FromString``,
upb) on a small hand-made body before the compiled path is judged on it: a body protobuf rejects
is never taken (``flatten_protobuf`` declines it and the reference, then the collector, rejects
it — the scope attributes too, which the rows never read); a body protobuf accepts (non-minimal
varints, unknown fields, groups, a known field with another wire type) is taken and gives the
reference's batch. Also: no undefined behaviour (an UBSan build),
doubles written the same under a comma locale, ``configure`` set once, and ``request_cost`` with
the bound that keeps one huge resource shared by many spans from being copied into every row.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import sysconfig
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from collector_helpers import RunningCollector
from google.protobuf.message import DecodeError
from hypothesis import given, settings
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from test_fast_path import (
    GENERATED,
    REFERENCE_ERRORS,
    REQUESTS,
    _compact_request,
    _realistic_request,
    check,
    reference,
)

from reach_collector.ingest import fast
from reach_collector.ingest.decode import PROTOBUF, UndecodableBody
from reach_otel import semconv as sc

_fastflat: Final = fast._fastflat
REPO: Final = Path(__file__).resolve().parents[2]
SOURCE: Final = REPO / "collector" / "reach_collector" / "ingest" / "_fastflat.c"


@pytest.fixture(autouse=True, scope="module")
def _fast_path_on() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("REACH_COLLECTOR_PURE_PYTHON", raising=False)
        yield


# ---------------------------------------------------------------- hand-made wire


def varint(value: int, width: int = 0) -> bytes:
    """``value`` as a varint, padded with 0x80 continuation bytes to ``width`` bytes (non-minimal)."""
    out = []
    while True:
        out.append(value & 0x7F)
        value >>= 7
        if not value:
            break
    while len(out) < width:
        out.append(0)
    return bytes([b | 0x80 for b in out[:-1]] + [out[-1]])


def tag(number: int, wire: int, width: int = 0) -> bytes:
    return varint(number << 3 | wire, width)


def ld(number: int, payload: bytes, tag_width: int = 0, len_width: int = 0) -> bytes:
    """A length-delimited field."""
    return tag(number, 2, tag_width) + varint(len(payload), len_width) + payload


def fixed64(number: int, value: int) -> bytes:
    return tag(number, 1) + struct.pack("<Q", value)


def kv(key: bytes, value: bytes | None) -> bytes:
    """A KeyValue: ``value`` is the encoded AnyValue (None: no value field)."""
    return ld(1, key) + (b"" if value is None else ld(2, value))


def span(extra: bytes = b"", name: bytes = b"s") -> bytes:
    """A valid span (ids, times, name), then ``extra`` (fields protobuf reads after the others)."""
    return ld(1, b"\x01" * 16) + ld(2, b"\x02" * 8) + ld(5, name) + fixed64(7, 10) + fixed64(8, 20) + extra


def body(
    span_bytes: bytes | None = None,
    scope: bytes | None = None,
    resource: bytes | None = None,
    ss_extra: bytes = b"",
    rs_extra: bytes = b"",
    top_extra: bytes = b"",
    top_tag_width: int = 0,
    top_len_width: int = 0,
) -> bytes:
    """An ExportTraceServiceRequest with one resource, one scope and one span."""
    ss = (b"" if scope is None else ld(1, scope)) + ld(2, span() if span_bytes is None else span_bytes)
    rs = (b"" if resource is None else ld(1, resource)) + ld(2, ss + ss_extra) + rs_extra
    return ld(1, rs, top_tag_width, top_len_width) + top_extra


def protobuf_accepts(raw: bytes) -> bool:
    try:
        ExportTraceServiceRequest.FromString(raw)
    except DecodeError:
        return False
    return True


STRING_ATTR: Final = kv(b"k", ld(1, b"v"))
INT_10_BYTES: Final = tag(3, 0) + b"\xff" * 9  # an int_value varint of 10 bytes, the last byte to add

# Bodies protobuf rejects. Each is checked against protobuf first (the rule is real), then the
# compiled path must not take it.
REJECTED: Final = {
    **{f"top-level tag of {w} bytes": body(top_tag_width=w) for w in (6, 7, 10)},
    **{f"top-level length of {w} bytes": body(top_len_width=w) for w in (6, 10)},
    **{f"span name tag of {w} bytes": body(span(ld(5, b"n", tag_width=w))) for w in (6, 10)},
    **{f"span name length of {w} bytes": body(span(ld(5, b"n", len_width=w))) for w in (6, 10)},
    "attribute key length of 6 bytes": body(span(ld(9, ld(1, b"k", len_width=6)))),
    "tag over 2**32 in 5 bytes": body(top_extra=b"\x88\x80\x80\x80\x10\x01"),
    "11-byte kind varint": body(span(tag(6, 0) + b"\xff" * 10 + b"\x01")),
    "field number 0 at the top": body(top_extra=b"\x00\x01"),
    "field number 0, wire 2, in a span": body(span(b"\x02\x00")),
    "field number 0 in an attribute": body(span(ld(9, b"\x00\x01"))),
    "field number 0 in a scope attribute": body(scope=ld(3, b"\x00\x01")),
    "wire type 6 in a span": body(span(tag(20, 6) + b"\x00" * 8)),
    "wire type 7 on a known field": body(span(tag(5, 7) + b"\x00" * 8)),
    "wire type 6 at the top": body(top_extra=tag(20, 6)),
    "end-group at the top": body(top_extra=tag(20, 4)),
    "end-group in a span": body(span(tag(20, 4))),
    "group never closed": body(span(tag(20, 3) + tag(1, 0) + b"\x01")),
    "group closed by another number": body(span(tag(20, 3) + tag(21, 4))),
    "span name past the end of its span": body(span(tag(5, 2) + b"\x05ab")),
    "attribute past the end of its span": body(span(tag(9, 2) + b"\x20" + STRING_ATTR)),
    "resource longer than the body": body(resource=ld(1, STRING_ATTR))[:-2],
    # InstrumentationScope.attributes, which the rows never read: checked all the same.
    "scope attribute key invalid UTF-8": body(scope=ld(1, b"lib") + ld(3, kv(b"\xff", ld(1, b"v")))),
    "scope attribute truncated": body(scope=ld(1, b"lib") + ld(3, b"\x0a\x05ab")),
    "scope attribute value invalid UTF-8": body(scope=ld(3, kv(b"k", ld(1, b"\xc3")))),
    "scope attribute, kvlist key invalid UTF-8": body(
        scope=ld(3, kv(b"k", ld(6, ld(1, kv(b"\xed\xa0\x80", None)))))
    ),
    "scope attribute, array string invalid UTF-8": body(
        scope=ld(3, kv(b"k", ld(5, ld(1, ld(1, b"\xe0\x80")))))
    ),
    "scope attribute tag of 6 bytes": body(scope=ld(3, ld(1, b"k", tag_width=6))),
    "scope attribute, group never closed": body(scope=ld(3, tag(9, 3))),
    "scope attribute after spans, invalid": body(ss_extra=ld(1, ld(3, kv(b"\xff", None)))),
    "scope name invalid UTF-8": body(scope=ld(1, b"\xff")),
}

# Bodies protobuf accepts, though no exporter writes them: the compiled path takes them too.
ACCEPTED: Final = {
    **{f"top-level tag of {w} bytes": body(top_tag_width=w) for w in (2, 5)},
    **{f"top-level length of {w} bytes": body(top_len_width=w) for w in (2, 5)},
    **{f"span name tag of {w} bytes": body(span(ld(5, b"n", tag_width=w))) for w in (3, 5)},
    **{f"span name length of {w} bytes": body(span(ld(5, b"n", len_width=w))) for w in (3, 5)},
    "largest field number, 5-byte tag": body(span(varint((2**29 - 1) << 3) + b"\x01")),
    **{
        f"10-byte kind varint ending {last:#04x}": body(span(tag(6, 0) + b"\xff" * 9 + bytes([last])))
        for last in (1, 2, 0x7F)
    },
    **{
        f"10-byte int attribute ending {last:#04x}": body(span(ld(9, kv(b"n", INT_10_BYTES + bytes([last])))))
        for last in (1, 0x7F)
    },
    "10-byte status code ending 0x02": body(span(ld(15, tag(3, 0) + b"\xff" * 9 + b"\x02"))),
    "10-byte unknown varint ending 0x7f": body(span(tag(20, 0) + b"\xff" * 9 + b"\x7f")),
    "span name as a varint": body(span(tag(5, 0) + b"\x01")),
    "span name as fixed32": body(span(tag(5, 5) + b"\x00" * 4)),
    "trace_id as a varint after the real one": body(span(tag(1, 0) + b"\x01")),
    "kind as length-delimited": body(span(ld(6, b"\x01"))),
    "flags as a varint": body(span(tag(16, 0) + b"\x01")),
    "start time as a varint": body(span(tag(7, 0) + b"\x05")),
    "event time as a varint": body(span(ld(11, tag(1, 0) + b"\x01" + ld(2, b"ev")))),
    "status message as a varint": body(span(ld(15, tag(2, 0) + b"\x01" + tag(3, 0) + b"\x02"))),
    "attribute key as a varint": body(span(ld(9, tag(1, 0) + b"\x01" + ld(2, ld(1, b"v"))))),
    "attribute value as a varint": body(span(ld(9, ld(1, b"k") + tag(2, 0) + b"\x01"))),
    "string_value as a varint": body(span(ld(9, kv(b"k", tag(1, 0) + b"\x01")))),
    "array element as a varint": body(span(ld(9, kv(b"k", ld(5, tag(1, 0) + b"\x01" + ld(1, ld(1, b"x"))))))),
    "events as a varint": body(span(tag(11, 0) + b"\x01")),
    "scope_spans as a varint": body(rs_extra=tag(2, 0) + b"\x01"),
    "resource as fixed64": body(rs_extra=fixed64(1, 7)),
    "unknown group in a span": body(span(tag(20, 3) + tag(20, 4))),
    "unknown group with fields": body(span(tag(20, 3) + tag(1, 0) + b"\x01" + ld(2, b"xy") + tag(20, 4))),
    "nested unknown groups": body(span(tag(20, 3) + tag(21, 3) + tag(21, 4) + tag(20, 4))),
    "group on the events field": body(span(tag(11, 3) + tag(11, 4))),
    "group at the top": body(top_extra=tag(20, 3) + tag(20, 4)),
    "group in an AnyValue": body(span(ld(9, kv(b"k", ld(1, b"v") + tag(9, 3) + tag(9, 4))))),
    "scope attribute key as a varint": body(scope=ld(3, tag(1, 0) + b"\x01")),
    "scope attributes as a varint": body(scope=tag(3, 0) + b"\x01"),
    "scope attributes, nested kvlist and bytes": body(
        scope=ld(1, b"lib") + ld(3, kv(b"k", ld(6, ld(1, kv(b"a", ld(7, b"\xff")) + kv(b"b", ld(5, b""))))))
    ),
    "scope attribute with a group and a string-table index": body(
        scope=ld(3, kv(b"k", tag(8, 0) + b"\x01") + tag(9, 3) + tag(9, 4))
    ),
}


@pytest.mark.parametrize("raw", REJECTED.values(), ids=REJECTED.keys())
def test_bodies_protobuf_rejects_are_never_taken(raw: bytes) -> None:
    assert not protobuf_accepts(raw), "the rule is not protobuf's: fix the case"
    assert fast.flatten_protobuf(raw) is None
    # What the service answers 400 for: UndecodableBody, or the reference's error reading an
    # attribute (the service maps any error flattening a request to UndecodableBody).
    with pytest.raises(REFERENCE_ERRORS):
        fast.flatten_body(raw, PROTOBUF)


@pytest.mark.parametrize("raw", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_bodies_protobuf_accepts_are_taken_and_agree(raw: bytes) -> None:
    assert protobuf_accepts(raw), "the rule is not protobuf's: fix the case"
    assert not isinstance(reference(raw), Exception)
    assert check(raw) is not None, "declined a body protobuf accepts"


def test_a_valid_body_the_scope_check_is_unsure_of_is_the_references() -> None:
    # Past its depth limit the compiled check is not sure: it declines, and the reference (which
    # parses the scope attributes as protobuf does) takes the valid body.
    value = ld(1, b"leaf")
    for _ in range(25):  # kvlist → KeyValue → AnyValue, 25 times: deeper than the check goes
        value = ld(6, ld(1, kv(b"k", value)))
    raw = body(scope=ld(1, b"lib") + ld(3, kv(b"deep", value)))
    assert protobuf_accepts(raw)
    assert fast.flatten_protobuf(raw) is None
    assert fast.flatten_body(raw, PROTOBUF).accepted == 1
    with pytest.raises(UndecodableBody):  # ten levels more: past protobuf's own depth limit
        for _ in range(10):
            value = ld(6, ld(1, kv(b"k", value)))
        fast.flatten_body(body(scope=ld(3, kv(b"deep", value))), PROTOBUF)


def test_collector_answers_400_for_what_protobuf_rejects(collector: RunningCollector) -> None:
    headers = {"content-type": PROTOBUF}
    for label in ("top-level tag of 6 bytes", "scope attribute key invalid UTF-8", "end-group in a span"):
        response = collector.post("/v1/traces", content=REJECTED[label], headers=headers)
        assert response.status_code == 400, label
    odd = ACCEPTED["unknown group with fields"]
    assert collector.post("/v1/traces", content=odd, headers=headers).status_code == 200
    assert collector.store.count_spans() == 1


# ---------------------------------------------------------------- undefined behaviour


def _sanitized_build(tmp_path: Path) -> Path:
    """The extension built with UBSan, aborting at the first undefined behaviour."""
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if not shutil.which(cc):
        pytest.skip(f"no C compiler ({cc}) for the sanitized build")
    out = tmp_path / "_fastflat_ubsan.so"
    flags = ["-O1", "-g", "-fPIC", "-shared", "-fsanitize=undefined", "-fno-sanitize-recover=undefined"]
    include = sysconfig.get_paths()["include"]
    build = subprocess.run(
        [cc, *flags, "-I", include, str(SOURCE), "-o", str(out)], capture_output=True, text=True, timeout=300
    )
    if build.returncode != 0:
        pytest.skip(f"no UBSan build here: {build.stderr[-300:]}")
    return out


def test_ordinary_requests_run_without_undefined_behaviour(tmp_path: Path) -> None:
    # Empty strings (names, keys, values, scope, trace state) on the ordinary paths are where a
    # NULL pointer was offset or copied from; every decode here must run clean under UBSan.
    so = _sanitized_build(tmp_path)
    bodies = [
        _realistic_request().SerializeToString(),
        _compact_request(),
        body(span(ld(9, kv(b"", ld(1, b""))), name=b"")),
        body(span(name=b""), scope=ld(1, b"") + ld(2, b""), resource=ld(1, kv(b"", None))),
        ld(1, ld(2, ld(2, ld(1, b"\x01" * 16) + ld(2, b"\x02" * 8)))),  # a span of ids only
        b"",
        REJECTED["scope attribute key invalid UTF-8"],
        ACCEPTED["scope attributes, nested kvlist and bytes"],
        ACCEPTED["unknown group with fields"],
    ]
    (tmp_path / "bodies.json").write_text(json.dumps([b.hex() for b in bodies]))
    script = textwrap.dedent(f"""
        import importlib.util, json, sys
        spec = importlib.util.spec_from_file_location("reach_collector.ingest._fastflat", {str(so)!r})
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules["reach_collector.ingest._fastflat"] = mod
        from reach_collector.ingest import fast
        assert fast._fastflat is mod and fast.enabled(), fast.why_off()
        for raw in json.load(open({str(tmp_path / "bodies.json")!r})):
            raw = bytes.fromhex(raw)
            mod.flatten(raw)
            mod.cost(raw)
        print("clean")
    """)
    env = {**os.environ, "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}
    env.pop("REACH_COLLECTOR_PURE_PYTHON", None)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert "runtime error" not in run.stderr, run.stderr[-2000:]
    assert run.returncode == 0 and run.stdout.strip() == "clean", run.stderr[-2000:]


# ---------------------------------------------------------------- locale


COMMA_LOCALES: Final = ("de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8", "nl_NL.UTF-8")
DOUBLES: Final = (0.5, -2.25, 1e-7, 123456.789, 2.0**70, 0.1 + 0.2, 5e-324, 1.0, -0.0, 1e16)


def _decode_under_comma_locale(env: dict[str, str]) -> dict[str, Any]:
    script = textwrap.dedent(f"""
        import json, locale, sys
        for name in {COMMA_LOCALES!r}:
            try:
                locale.setlocale(locale.LC_ALL, name)
                break
            except locale.Error:
                pass
        else:
            print(json.dumps(None))
            sys.exit(0)
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
        from reach_collector.ingest import fast
        request = ExportTraceServiceRequest()
        span = request.resource_spans.add().scope_spans.add().spans.add(
            trace_id=b"\\x01" * 16, span_id=b"\\x02" * 8, start_time_unix_nano=1, end_time_unix_nano=2
        )
        for i, value in enumerate({DOUBLES!r}):
            span.attributes.add(key=f"d{{i}}").value.double_value = value
        batch = fast.flatten_protobuf(request.SerializeToString())
        print(json.dumps({{
            "locale": locale.setlocale(locale.LC_NUMERIC),
            "point": locale.localeconv()["decimal_point"],
            "attributes": None if batch is None else batch.table.column("attributes")[0].as_py(),
        }}))
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    out: dict[str, Any] = json.loads(run.stdout)
    return out


def test_doubles_are_written_the_same_under_a_comma_locale(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "REACH_COLLECTOR_PURE_PYTHON"}
    got = _decode_under_comma_locale(env)
    if got is None and shutil.which("localedef"):
        # No comma locale installed: compile one into tmp_path (needs the glibc locale sources).
        made = subprocess.run(
            ["localedef", "-i", "de_DE", "-f", "UTF-8", str(tmp_path / "de_DE.UTF-8")],
            capture_output=True,
            timeout=120,
        )
        if made.returncode in (0, 1) and (tmp_path / "de_DE.UTF-8").exists():  # 1: warnings only
            got = _decode_under_comma_locale({**env, "LOCPATH": str(tmp_path)})
    if got is None:
        pytest.skip("no comma-decimal locale here, and none could be compiled")
    assert got["point"] == ",", f"{got['locale']} is not a comma locale"
    assert got["attributes"] is not None, "the compiled path declined the request"
    values = json.loads(got["attributes"])  # "0,5" would not be JSON, or not this value
    assert list(values) == [f"d{i}" for i in range(len(DOUBLES))]
    for value, want in zip(values.values(), DOUBLES, strict=True):
        assert isinstance(value, float) and value == want, (value, want)
        assert math.copysign(1, value) == math.copysign(1, want), (value, want)


# ---------------------------------------------------------------- configure, once


def test_configure_again_with_the_same_values_is_a_no_op() -> None:
    raw = _realistic_request().SerializeToString()
    before = fast.flatten_protobuf(raw)
    assert _fastflat.configure(*fast.CONFIGURATION) is None
    after = fast.flatten_protobuf(raw)
    assert before is not None and after is not None
    assert after.table.equals(before.table)


def test_configure_with_other_values_raises_and_changes_nothing() -> None:
    keys, ops, kinds, texts, llm, buckets = fast.CONFIGURATION
    other_keys = (sc.GEN_AI_AGENT_NAME, *keys[1:])  # operation read from the agent's name
    for changed in (
        (other_keys, ops, kinds, texts, llm, buckets),
        (keys, ops, kinds, texts, llm[:-1], buckets),
        (keys, ops, kinds, texts, llm, (*buckets[:-1], buckets[-1] * 2)),
    ):
        with pytest.raises(RuntimeError, match="already configured"):
            _fastflat.configure(*changed)
    with pytest.raises(ValueError):
        _fastflat.configure(keys[:-1], ops, kinds, texts, llm, buckets)
    assert check(_realistic_request().SerializeToString()) is not None  # still the reference's batch


def test_configure_while_decodes_run_does_not_disturb_them() -> None:
    # Decodes run without the GIL in threads; configure calls meanwhile (same values, other values,
    # a wrong shape) must leave what they read untouched.
    raw = _realistic_request(traces=20).SerializeToString()
    want = fast.flatten_protobuf(raw)
    assert want is not None
    keys, *rest = fast.CONFIGURATION
    stop = threading.Event()
    failures: list[str] = []

    def decode() -> None:
        while not stop.is_set():
            got = fast.flatten_protobuf(raw)
            if got is None or not got.table.equals(want.table) or got.stats != want.stats:
                failures.append("a decode changed while configure was called")
                return

    threads = [threading.Thread(target=decode) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline and not failures:
            _fastflat.configure(*fast.CONFIGURATION)
            with pytest.raises(RuntimeError):
                _fastflat.configure(tuple(reversed(keys)), *rest)
            with pytest.raises(ValueError):
                _fastflat.configure((), *rest)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not failures


# ---------------------------------------------------------------- request cost


def expected_cost(raw: bytes) -> int:
    """The definition, from protobuf's parse (the bodies here are canonical: a message's length on
    the wire is its ByteSize)."""
    request = ExportTraceServiceRequest.FromString(raw)
    total = len(raw)
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            total += len(ss.spans) * (rs.resource.ByteSize() + ss.scope.ByteSize())
    return total


@settings(GENERATED, max_examples=60)
@given(REQUESTS[True])
def test_cost_of_generated_requests_follows_its_definition(raw: bytes) -> None:
    assert fast.request_cost(raw) == expected_cost(raw)


def test_cost_of_a_hand_made_request() -> None:
    resource_a, resource_b = ld(1, kv(b"a", None)), ld(1, kv(b"bb", None))  # 5 and 6 bytes
    scope = ld(1, b"lib")  # 5 bytes
    ss1 = ld(1, scope) + ld(2, span()) + tag(2, 0) + b"\x01" + ld(2, b"\xff")  # 2 spans (a varint is none)
    ss2 = ld(2, span()) + tag(9, 3) + tag(9, 4)  # 1 span, no scope
    rs = ld(2, ss1) + ld(1, resource_a) + ld(2, ss2) + ld(1, resource_b) + ld(7, b"unknown")
    raw = ld(1, rs) + tag(15, 0) + b"\x01" + ld(1, ld(2, ld(2, span())))
    # The first ResourceSpans: R = 5 + 6; its scopes: 2 spans × (R + 5) + 1 span × (R + 0); the
    # second: one span, no resource nor scope. Span bodies are not read (one is b"\xff").
    assert fast.request_cost(raw) == len(raw) + 2 * (11 + 5) + 1 * 11


@pytest.mark.parametrize(
    "raw",
    [
        body()[:-3],
        body(top_tag_width=6),
        body(top_extra=tag(20, 7)),
        body(ss_extra=tag(2, 2) + b"\x7f"),
        ld(1, ld(2, b"\x0a\x09scope")),
    ],
    ids=["truncated", "6-byte tag", "wire type 7", "span past the end", "scope past the end"],
)
def test_cost_is_none_for_a_body_malformed_where_it_reads(raw: bytes) -> None:
    assert fast.request_cost(raw) is None


def test_cost_does_not_read_span_bodies() -> None:
    raw = body(span_bytes=b"\xff\xff")  # a malformed span: for flatten to reject
    assert fast.request_cost(raw) == len(raw)


def test_cost_is_none_when_the_fast_path_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACH_COLLECTOR_PURE_PYTHON", "1")
    assert fast.request_cost(body()) is None


def _best(fn: Any, arg: bytes, runs: int = 7) -> float:
    best = math.inf
    for _ in range(runs):
        t = time.perf_counter()
        fn(arg)
        best = min(best, time.perf_counter() - t)
    return best


def test_cost_is_a_small_fraction_of_a_flatten() -> None:
    raw = _realistic_request(traces=60).SerializeToString()
    cost, flatten = _best(fast.request_cost, raw), _best(fast.flatten_protobuf, raw)
    assert cost < 0.05 * flatten, f"cost {cost * 1e6:.0f} µs against flatten {flatten * 1e6:.0f} µs"


def _shared_resource_body(resource_text: str, spans: int) -> bytes:
    """Many tiny spans under one huge resource: each row would carry the resource's JSON."""
    attributes = ld(1, kv(sc.SERVICE_NAME.encode(), ld(1, b"svc"))) + ld(
        1, kv(b"blob", ld(1, resource_text.encode()))
    )
    resource = ld(1, attributes)
    tiny = ld(2, ld(1, b"\x01" * 16) + ld(2, b"\x02" * 8) + fixed64(7, 1) + fixed64(8, 2))
    return ld(1, resource + ld(2, tiny * spans))


@pytest.mark.parametrize(
    ("text", "spans"),
    [("x" * 600_000, 4_000), ("\x01" * 400_000, 1_000)],
    ids=["600 KB resource, 4000 spans", "400 KB of escapes (2.4 MB of JSON), 1000 spans"],
)
def test_flatten_refuses_at_once_rows_that_would_copy_a_huge_resource(
    text: str, spans: int, tmp_path: Path
) -> None:
    # Under 30 KB gzipped; the rows would carry 2.4 GB of resource JSON. The second body's cost is
    # only 400 MB: the JSON size (six bytes per escaped byte) is what makes it too large.
    assert check(_shared_resource_body(text, 10)) is not None  # the same shape, fewer spans: taken
    raw = _shared_resource_body(text, spans)
    assert len(gzip.compress(raw)) < 30_000
    assert (fast.request_cost(raw) or 0) >= spans * len(text)
    (tmp_path / "body.bin").write_bytes(raw)
    script = textwrap.dedent(f"""
        import resource, time
        from reach_collector.ingest import fast
        raw = open({str(tmp_path / "body.bin")!r}, "rb").read()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t = time.perf_counter()
        out = fast.flatten_protobuf(raw)
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        print(out is None, time.perf_counter() - t, grown // 1024)
    """)
    env = {k: v for k, v in os.environ.items() if k != "REACH_COLLECTOR_PURE_PYTHON"}
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    declined, seconds, grown_mb = run.stdout.split()
    assert declined == "True"
    assert float(seconds) < 0.5, f"took {float(seconds):.2f} s to decline"
    assert int(grown_mb) < 200, f"grew by {grown_mb} MB"

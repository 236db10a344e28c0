"""OTLP/gRPC checks the token before it reads the message, on a real collector on loopback: large
exports without a valid ingest token are refused at once, costing the collector neither the parse
nor the memory of their messages; an authorized export is stored as before."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from collector_helpers import request_with
from collector_process import CollectorProcess, free_port

METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
TOKENS = {"REACH_INGEST_TOKEN": "in-secret", "REACH_QUERY_TOKEN": "q-secret"}
ROUNDS = 4  # of the three refused kinds below


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def large_export(size: int = 14 << 20) -> bytes:
    """A valid ExportTraceServiceRequest of ``size`` bytes made of small spans (the costliest
    shape to parse), built on the wire rather than through protobuf."""
    span = request_with([{"name": "execute_tool lookup"}]).resource_spans[0].scope_spans[0].spans[0]
    for i in range(4):
        attribute = span.attributes.add()
        attribute.key, attribute.value.int_value = f"k{i}", i
    one = _field(2, span.SerializeToString())  # ScopeSpans.spans
    scope = one * (size // len(one))
    return _field(1, _field(2, scope))  # ExportTraceServiceRequest.resource_spans[].scope_spans


def cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[tuple[CollectorProcess, str]]:
    port = free_port()
    process = CollectorProcess(
        tmp_path / "t.duckdb", "--grpc-port", str(port), "--retention", "0s", env=TOKENS
    )
    with process:
        yield process, f"127.0.0.1:{port}"


def test_unauthenticated_large_exports_are_refused_before_they_are_parsed(
    collector: tuple[CollectorProcess, str],
) -> None:
    process, target = collector
    assert process.proc is not None
    pid = process.proc.pid
    body = large_export()
    with grpc.insecure_channel(target) as channel:
        export = channel.unary_unary(METHOD)  # raw bytes both ways
        # Warm up the channel and the server's call path on an authorized export.
        export(
            request_with([{}]).SerializeToString(),
            metadata=(("authorization", "Bearer in-secret"),),
            timeout=10,
        )
        cpu, rss, started = cpu_s(pid), rss_mib(pid), time.monotonic()
        for metadata, code in [
            ((), grpc.StatusCode.UNAUTHENTICATED),
            ((("authorization", "Bearer nope"),), grpc.StatusCode.UNAUTHENTICATED),
            ((("authorization", "Bearer q-secret"),), grpc.StatusCode.PERMISSION_DENIED),
        ] * ROUNDS:
            with pytest.raises(grpc.RpcError) as err:
                export(body, metadata=metadata, timeout=20)
            assert err.value.code() == code
        spent, grown, took = cpu_s(pid) - cpu, rss_mib(pid) - rss, time.monotonic() - started
    # Receiving and parsing one of these costs the collector over 0.1 s of CPU and 14 MiB or more.
    assert spent < 0.5, f"{spent:.2f} s of collector CPU for {3 * ROUNDS} refused exports"
    assert grown < 32, f"RSS grew {grown:.0f} MiB"
    assert took < 10


def test_an_authorized_export_is_still_parsed_and_stored(collector: tuple[CollectorProcess, str]) -> None:
    process, target = collector
    trace_id = bytes(range(101, 117))
    with grpc.insecure_channel(target) as channel:
        export = channel.unary_unary(METHOD)
        reply = export(
            request_with([{"trace_id": trace_id}]).SerializeToString(),
            metadata=(("authorization", "Bearer in-secret"),),
            timeout=10,
        )
        assert reply == b""  # an empty ExportTraceServiceResponse: nothing rejected
        with pytest.raises(grpc.RpcError) as err:  # bytes that are not a request: refused, not stored
            export(b"\x0a\xff", metadata=(("authorization", "Bearer in-secret"),), timeout=10)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    stored = httpx.get(
        f"{process.url}/api/traces/{trace_id.hex()}", headers={"authorization": "Bearer q-secret"}, timeout=10
    )
    assert stored.status_code == 200
    assert stored.json()["span_count"] == 1

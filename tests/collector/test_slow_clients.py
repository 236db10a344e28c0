"""Slow clients are timed out and connections capped, on a real collector on loopback: over
``server.max_connections`` a connection is answered 503 at once; headers or a body still
trickling in at ``server.header_timeout`` / ``server.body_timeout`` are answered 408 and closed;
headers over ``server.max_header_bytes`` get 431; over gRPC a call whose message has not arrived by
the body timeout is cancelled, and calls over ``server.grpc_max_concurrent_rpcs`` get
RESOURCE_EXHAUSTED."""

from __future__ import annotations

import select
import socket
import struct
import time
from collections.abc import Iterator

import grpc
import httpx
import pytest
from collector_helpers import request_with
from collector_process import CollectorProcess, free_port

from reach_collector.config import ConfigError, from_mapping

CAP = 20
GRPC_CAP = 2
TIMEOUT_S = 1.0
METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
LIMITS = (
    f"{{max_connections: {CAP}, header_timeout: {TIMEOUT_S}s, body_timeout: {TIMEOUT_S}s, "
    f"max_header_bytes: 16384, grpc_max_concurrent_rpcs: {GRPC_CAP}, decode_workers: 0}}"
)


@pytest.fixture(scope="module")  # one collector: each test leaves no connection behind
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[CollectorProcess, int]]:
    tmp_path = tmp_path_factory.mktemp("slow-clients")
    config = tmp_path / "reach.yaml"
    config.write_text(f"server: {LIMITS}\n")
    grpc_port = free_port()
    with CollectorProcess(tmp_path / "t.duckdb", "--config", str(config), "--grpc-port", str(grpc_port)) as c:
        yield c, grpc_port


def _connect(port: int, first: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    if first:
        sock.sendall(first)
    return sock


def _answer(sock: socket.socket, within: float) -> bytes | None:
    """What the server sent before closing, b"" if it closed without a word; None if it still
    holds the connection open after ``within`` seconds."""
    deadline = time.monotonic() + within
    data = b""
    while (left := deadline - time.monotonic()) > 0:
        if not select.select([sock], [], [], left)[0]:
            break
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk
    return None


def _status(answer: bytes | None) -> int | None:
    return int(answer.split(b" ", 2)[1]) if answer else None


def _still_serves(collector: CollectorProcess) -> None:
    body = request_with([{}]).SerializeToString()
    headers = {"content-type": "application/x-protobuf"}
    assert (
        httpx.post(collector.url + "/v1/traces", content=body, headers=headers, timeout=10).status_code == 200
    )


def test_two_hundred_slow_clients_are_capped_then_timed_out(collector: tuple[CollectorProcess, int]) -> None:
    c, _ = collector
    started = time.monotonic()
    socks = [_connect(c.port, b"GET /healthz HTTP/1.1\r\nhost: 127") for _ in range(200)]
    try:
        answers = [_answer(s, within=0.5) for s in socks[CAP:]]
        # Over the cap: answered 503 (Retry-After) and closed as they were accepted.
        assert [_status(a) for a in answers] == [503] * (200 - CAP)
        assert all(a is not None and b"retry-after: 1" in a.lower() for a in answers)
        # The ones within it: held only until the header timeout, then 408 and closed.
        held = [_answer(s, within=TIMEOUT_S + 5) for s in socks[:CAP]]
        assert [_status(a) for a in held] == [408] * CAP
        assert time.monotonic() - started < TIMEOUT_S + 5
    finally:
        for sock in socks:
            sock.close()
    _still_serves(c)


def test_a_connection_that_says_nothing_is_closed_at_the_header_timeout(
    collector: tuple[CollectorProcess, int],
) -> None:
    c, _ = collector
    sock = _connect(c.port)
    try:
        assert _answer(sock, within=TIMEOUT_S + 5) == b""  # closed, nothing to answer
    finally:
        sock.close()


def test_headers_that_trickle_in_are_answered_408(collector: tuple[CollectorProcess, int]) -> None:
    c, _ = collector
    sock = _connect(c.port, b"POST /v1/traces HTTP/1.1\r\nhost: 127.0.0.1\r\n")
    started = time.monotonic()
    try:
        while time.monotonic() - started < TIMEOUT_S + 5:
            if select.select([sock], [], [], 0.2)[0]:
                break
            sock.sendall(b"x-slow: 1\r\n")  # a header at a time, never the blank line
        assert _status(_answer(sock, within=1)) == 408
    finally:
        sock.close()


def test_headers_over_the_size_cap_are_431(collector: tuple[CollectorProcess, int]) -> None:
    c, _ = collector
    sock = _connect(c.port, b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n" + b"x-big: " + b"a" * 20_000)
    try:
        assert _status(_answer(sock, within=TIMEOUT_S / 2)) == 431
    finally:
        sock.close()


@pytest.mark.parametrize(
    ("path", "media"), [("/v1/traces", "application/x-protobuf"), ("/api/heartbeats", "application/json")]
)
def test_a_body_that_trickles_in_is_answered_408(
    collector: tuple[CollectorProcess, int], path: str, media: str
) -> None:
    c, _ = collector
    head = f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1:{c.port}\r\ncontent-type: {media}\r\n"
    head += "content-length: 1000\r\n\r\n"
    sock = _connect(c.port, head.encode())
    started = time.monotonic()
    try:
        while time.monotonic() - started < TIMEOUT_S + 5:
            if select.select([sock], [], [], 0.2)[0]:
                break
            sock.sendall(b"\0" * 10)  # ten bytes every 200 ms: never done
        answer = _answer(sock, within=1)
        assert _status(answer) == 408, answer
        assert answer is not None and b"server.body_timeout" in answer
    finally:
        sock.close()
    _still_serves(c)


class _Http2:
    """Just enough HTTP/2 for a gRPC call that sends part of its message and stalls."""

    def __init__(self, port: int) -> None:
        self.sock = _connect(port, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + self._frame(4, 0, 0, b""))
        self.authority = f"127.0.0.1:{port}"

    @staticmethod
    def _frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
        return (
            struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload
        )

    def stall(self, stream: int) -> None:
        """HEADERS, then a DATA frame with 10 bytes of a 1000-byte message."""
        fields = [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", METHOD),
            (":authority", self.authority),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
        ]
        block = b"".join(
            b"\0" + bytes([len(k)]) + k.encode() + bytes([len(v)]) + v.encode() for k, v in fields
        )
        message = b"\0" + struct.pack(">I", 1000) + b"\0" * 10
        self.sock.sendall(self._frame(1, 0x4, stream, block) + self._frame(0, 0, stream, message))

    def ended(self, within: float, expect: frozenset[int] = frozenset()) -> set[int]:
        """The streams the server ended (trailers or RST_STREAM) within ``within`` seconds, or
        as soon as all of ``expect`` have."""
        deadline, ended, buffer = time.monotonic() + within, set(), b""
        while (left := deadline - time.monotonic()) > 0 and not (expect and expect <= ended):
            if not select.select([self.sock], [], [], left)[0]:
                break
            chunk = self.sock.recv(65536)
            if not chunk:
                break
            buffer += chunk
            while len(buffer) >= 9 and len(buffer) >= 9 + int.from_bytes(buffer[:3], "big"):
                size, kind, flags = int.from_bytes(buffer[:3], "big"), buffer[3], buffer[4]
                stream = int.from_bytes(buffer[5:9], "big") & 0x7FFFFFFF
                if kind == 4 and not flags & 1:  # the server's SETTINGS: acknowledge them
                    self.sock.sendall(self._frame(4, 1, 0, b""))
                if kind == 3 or (kind == 1 and flags & 1):
                    ended.add(stream)
                buffer = buffer[9 + size :]
        return ended

    def close(self) -> None:
        self.sock.close()


def _export_once_freed(export: grpc.UnaryUnaryMultiCallable, body: bytes, within: float = 5.0) -> bytes:
    """The answer to ``body`` once the cap has room again. gRPC frees a call's place in the cap
    when its handler returns, a moment after the client has seen the stream ended, so a call made
    at once may still find the cap full: RESOURCE_EXHAUSTED is retried (as OTLP exporters do)
    until ``within`` seconds have passed."""
    deadline = time.monotonic() + within
    while True:
        try:
            return bytes(export(body, timeout=10))
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.RESOURCE_EXHAUSTED or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_grpc_calls_whose_message_stalls_are_cancelled_and_capped(
    collector: tuple[CollectorProcess, int],
) -> None:
    _, grpc_port = collector
    raw = _Http2(grpc_port)
    try:
        raw.stall(1)
        raw.stall(3)
        assert raw.ended(within=0.3) == set()  # both in progress, waiting for their messages
        with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
            export = channel.unary_unary(METHOD)
            body = request_with([{}]).SerializeToString()
            with pytest.raises(grpc.RpcError) as err:  # two calls in progress: the cap
                export(body, timeout=10)
            assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert raw.ended(TIMEOUT_S + 5, expect=frozenset({1, 3})) == {1, 3}  # cut off at the body timeout
            assert _export_once_freed(export, body) == b""  # and the collector takes calls again
    finally:
        raw.close()


def test_limits_are_validated_naming_the_key() -> None:
    limits = from_mapping({"server": {"max_connections": 5, "body_timeout": "2s"}}).limits
    assert (limits.max_connections, limits.body_timeout_s, limits.header_timeout_s) == (5, 2.0, 10.0)
    for bad, key in [
        ({"max_connections": 0}, "server.max_connections"),
        ({"header_timeout": "0s"}, "server.header_timeout"),
        ({"body_timeout": "soon"}, "server.body_timeout"),
        ({"max_inflight_bytes": 4096}, "server.max_inflight_bytes"),
        ({"grpc_max_concurrent_rpcs": -1}, "server.grpc_max_concurrent_rpcs"),
    ]:
        with pytest.raises(ConfigError, match=key):
            from_mapping({"server": bad}, "reach.yaml")

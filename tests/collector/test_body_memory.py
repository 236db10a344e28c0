"""Bodies still being read count against the collector's memory bound, on a real collector on
loopback: held-open OTLP uploads get further ingest a 429 with Retry-After, the collector's memory
stays within the bound, and it is handed back once they close; a JSON body over its 64 KB limit is
refused before it is read whole."""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from collector_helpers import request_with
from collector_process import CollectorProcess

MIB = 1 << 20
BODY = 8 * MIB
IN_FLIGHT = 32 * MIB  # room for four bodies of BODY
UPLOADS = 24
PB = {"content-type": "application/x-protobuf"}


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


class Upload:
    """A POST on its own connection: headers, then ``send`` bytes of a body, stopping as soon as the
    server answers; the connection stays open (a slow client) until ``close``."""

    def __init__(self, port: int, path: str, media: str, *, declared: int | None) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=20)
        self.declared = declared
        framing = f"content-length: {declared}" if declared is not None else "transfer-encoding: chunked"
        head = f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: {media}\r\n{framing}\r\n\r\n"
        self.sock.sendall(head.encode())
        self.sent = 0
        self.answer = b""

    def send(self, size: int, piece: int = 256 << 10) -> None:
        chunk = b"\0" * piece
        while self.sent < size and not self.answered():
            part = chunk[: min(piece, size - self.sent)]
            if self.declared is None:
                part = f"{len(part):x}\r\n".encode() + part + b"\r\n"
            try:
                self.sock.sendall(part)
            except OSError:
                break
            self.sent += min(piece, size - self.sent)

    def answered(self, wait: float = 0) -> bool:
        if not self.answer and select.select([self.sock], [], [], wait)[0]:
            self.answer = self.sock.recv(4096)
        return bool(self.answer)

    @property
    def status(self) -> int:
        return int(self.answer.split(b" ", 2)[1]) if self.answer else 0

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[CollectorProcess]:
    config = tmp_path / "reach.yaml"
    config.write_text(
        f"server: {{max_body_bytes: {BODY}, max_inflight_bytes: {IN_FLIGHT}, decode_workers: 0}}\n"
    )
    with CollectorProcess(tmp_path / "t.duckdb", "--config", str(config)) as running:
        yield running


def _ingest(collector: CollectorProcess) -> httpx.Response:
    body = request_with([{"name": f"normal-{i}"} for i in range(200)]).SerializeToString()
    return httpx.post(collector.url + "/v1/traces", content=body, headers=PB, timeout=10)


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_held_open_bodies_stay_in_the_bound_and_further_ingest_gets_429(
    collector: CollectorProcess, framing: str
) -> None:
    assert collector.proc is not None
    pid = collector.proc.pid
    assert _ingest(collector).status_code == 200  # warm: the first request's allocations are not the flood's
    base = rss_mib(pid)
    uploads: list[Upload] = []
    try:
        for _ in range(UPLOADS):  # one after another, each held open one byte short of its end
            upload = Upload(
                collector.port,
                "/v1/traces",
                PB["content-type"],
                declared=BODY if framing != "chunked" else None,
            )
            uploads.append(upload)
            upload.send(BODY - 1)
            upload.answered(wait=0.05)
        # Once the collector has read what the held uploads sent (some may still sit in socket
        # buffers), they fill the bound: further ingest is refused.
        deadline = time.monotonic() + 15
        while (response := _ingest(collector)).status_code != 429:
            assert time.monotonic() < deadline, f"ingest got {response.status_code}, not 429"
            time.sleep(0.1)
        assert response.headers["retry-after"] == "1"
        held = rss_mib(pid) - base
        refused = [u for u in uploads if u.answered(wait=0.2)]
        # Four bodies fill the bound; every other upload was answered 429 with a Retry-After.
        assert len(refused) == UPLOADS - IN_FLIGHT // BODY, [u.status for u in uploads]
        assert all(u.status == 429 and b"retry-after: 1" in u.answer.lower() for u in refused)
        assert held < 3 * IN_FLIGHT / MIB, f"held {held:.0f} MiB for {UPLOADS} open uploads"
    finally:
        for upload in uploads:
            upload.close()
    deadline = time.monotonic() + 15
    while _ingest(collector).status_code != 200:
        assert time.monotonic() < deadline, "ingest still refused after the uploads went away"
        time.sleep(0.2)
    while rss_mib(pid) - base > IN_FLIGHT / MIB / 2:  # handed back, not kept for the next flood
        assert time.monotonic() < deadline, f"RSS still {rss_mib(pid) - base:.0f} MiB up after they closed"
        time.sleep(0.2)


def test_a_json_body_over_its_limit_is_refused_before_it_is_read(collector: CollectorProcess) -> None:
    assert collector.proc is not None
    pid = collector.proc.pid
    base = rss_mib(pid)
    started = time.monotonic()
    upload = Upload(collector.port, "/api/heartbeats", "application/json", declared=None)
    try:
        upload.send(64 * MIB)  # stops when the server answers
        assert upload.answered(wait=10)
        assert upload.status == 413, upload.answer
        # The server stopped at 64 KB; what was sent beyond it sat in socket buffers.
        assert upload.sent < 16 * MIB, f"{upload.sent >> 20} MiB sent before the 413"
    finally:
        upload.close()
    assert rss_mib(pid) - base < 16
    declared = Upload(collector.port, "/api/heartbeats", "application/json", declared=400 * MIB)
    try:  # a declared length over the limit: answered before a byte of the body is sent
        assert declared.answered(wait=5)
        assert declared.status == 413, declared.answer
    finally:
        declared.close()
    assert time.monotonic() - started < 10

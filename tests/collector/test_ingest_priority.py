"""Ingest's threads and decoder processes run at a lower CPU priority than the threads that answer
queries (ingest.priority): the writer's thread, the decoding threads and the decoder processes are
BACKGROUND_NICE steps less urgent than the collector, and the threads that serve reads are not."""

from __future__ import annotations

import asyncio
import sys
import threading

import pytest
from collector_helpers import request_with

from reach_collector.ingest import fast
from reach_collector.ingest.decode import JSON, PROTOBUF
from reach_collector.ingest.pool import start_pool
from reach_collector.ingest.priority import BACKGROUND_NICE, thread_nice
from reach_collector.ingest.service import IngestService
from reach_collector.ingest.writer import Writer
from reach_collector.store.duckdb_store import DuckDBStore

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="nice values are per thread on Linux only"
)


def _lowered(base: int) -> int:
    return min(19, base + BACKGROUND_NICE)


def _body() -> bytes:
    return bytes(request_with([{"name": "agent"}]).SerializeToString())


@pytest.fixture
def writer() -> object:
    store = DuckDBStore()
    w = Writer(store)
    yield w
    w.close()
    store.close()


def test_the_writer_commits_at_the_lower_priority_and_the_caller_keeps_its_own(writer: Writer) -> None:
    base = thread_nice()
    assert writer.call(lambda store: thread_nice()).result(10) == _lowered(base)
    assert thread_nice() == base  # the thread that asked (as a query's would) is unchanged


def test_decoding_threads_run_at_the_lower_priority(writer: Writer, monkeypatch: pytest.MonkeyPatch) -> None:
    base = thread_nice()
    seen: list[int] = []
    compiled, reference = fast.flatten_protobuf, IngestService.decode_http

    def spy_compiled(raw: bytes) -> object:
        seen.append(thread_nice())
        return compiled(raw)

    def spy_reference(self: IngestService, *args: object) -> object:
        seen.append(thread_nice())
        return reference(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(fast, "flatten_protobuf", spy_compiled)
    monkeypatch.setattr(IngestService, "decode_http", spy_reference)
    service = IngestService(writer, max_body_bytes=1 << 20)  # no pool: the reference path in a thread
    assert asyncio.run(service.decode_async(_body(), PROTOBUF, None)).accepted == 1
    assert asyncio.run(service.decode_async(b'{"resourceSpans": []}', JSON, None)).accepted == 0
    assert seen and set(seen) == {_lowered(base)}
    assert thread_nice() == base


def test_decoder_processes_run_at_the_lower_priority() -> None:
    base = thread_nice()
    pool = start_pool(1)
    try:
        assert pool.submit(thread_nice).result(60) == _lowered(base)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    assert thread_nice() == base


def test_a_thread_of_its_own_is_lowered_once_not_the_process() -> None:
    from reach_collector.ingest.priority import lower_this_thread

    base = thread_nice()
    seen: list[int] = []

    def run() -> None:
        lower_this_thread()
        seen.append(thread_nice())

    t = threading.Thread(target=run)
    t.start()
    t.join(10)
    assert seen == [_lowered(base)]
    assert thread_nice() == base

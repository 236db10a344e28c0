"""The batching processor finds the SDK's span queue in every opentelemetry-sdk the dependency floor
admits — a ``BatchProcessor``'s ``_queue`` from 1.34, the processor's own ``queue`` in 1.27–1.33 —
so drops are counted in both; in a layout it does not know, it says so once instead of turning
drop counting off in silence."""

from __future__ import annotations

import logging
from collections import deque
from types import SimpleNamespace

import pytest
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from reach_otel._export import sdk_queue


def test_the_installed_sdks_queue_is_found() -> None:
    processor = BatchSpanProcessor(InMemorySpanExporter(), max_queue_size=7, max_export_batch_size=7)
    try:
        queue = sdk_queue(processor)
        assert isinstance(queue, deque) and queue.maxlen == 7
    finally:
        processor.shutdown()


def test_the_queue_of_sdks_before_1_34_is_found() -> None:
    older = SimpleNamespace(queue=deque(maxlen=5))  # BatchSpanProcessor.queue, 1.27 to 1.33
    assert sdk_queue(older) is older.queue


def test_an_unknown_layout_is_said_once_not_silently_ignored(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="reach_otel"):
        assert sdk_queue(SimpleNamespace(_batch_processor=SimpleNamespace())) is None
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert "not counted in dropped_spans()" in caplog.records[0].getMessage()

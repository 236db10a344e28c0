"""Shared fixtures: an in-memory span exporter per test, installed into reach_otel's handler.

Tests never touch OpenTelemetry's global provider: each gets its own TracerProvider and a fresh
TelemetryHandler, and the previous default handler is restored afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from reach_otel.config import load_settings
from reach_otel.handler import TelemetryHandler, set_handler


class Recorder:
    """Finished spans of one test, with lookups by name."""

    def __init__(self, exporter: InMemorySpanExporter, provider: TracerProvider, handler: TelemetryHandler):
        self.exporter = exporter
        self.provider = provider
        self.handler = handler

    @property
    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, f"expected one span {name!r}, got {[s.name for s in self.spans]}"
        return found[0]

    def wait_one(self, name: str, timeout: float = 5.0) -> ReadableSpan:
        """Like ``one``, for a span another thread ends a moment after the caller got its answer."""
        deadline = time.monotonic() + timeout
        while not self.named(name) and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.one(name)

    def clear(self) -> None:
        self.exporter.clear()


@pytest.fixture
def make_recorder() -> Iterator[Callable[..., Recorder]]:
    """Build a recorder with settings (``capture_content=True``, ``max_hops=2``...) for this test."""
    previous = set_handler(None)
    providers: list[TracerProvider] = []

    def make(**settings: Any) -> Recorder:
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        providers.append(provider)
        handler = TelemetryHandler(tracer_provider=provider, settings=load_settings(env={}, **settings))
        set_handler(handler)
        return Recorder(exporter, provider, handler)

    yield make
    set_handler(previous)
    for provider in providers:
        provider.shutdown()


@pytest.fixture
def rec(make_recorder: Callable[..., Recorder]) -> Recorder:
    return make_recorder()

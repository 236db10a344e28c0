"""The export side of ``init()``: a burst-proof queue, an exporter that counts what it could not send,
quiet retries, and an exit that does not wait on a collector that refuses connections.

With the collector down the app's stderr stays quiet: the SDK exporter's own retry and failure lines
are turned into DEBUG records while it runs for us, and reach_otel says so itself in one WARNING line
per minute at most. ``dropped`` counts every span that was not delivered: queue drops and failed
exports alike.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import urllib.request
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from reach_otel._safety import logger

#: Default queue: a burst of 10 000 spans in one second fits while the exporter catches up.
DEFAULT_MAX_QUEUE_SIZE = 16_384
#: While exports fail, the queue keeps at most this many spans (so an outage costs little memory).
OUTAGE_QUEUE_SIZE = 2048
WARN_INTERVAL_S = 60.0
#: Set in the environment of an MCP stdio server an instrumented client starts: it exports to the
#: same collector, and the client says when that collector is down, so the server says it at DEBUG
#: (its stderr is the client's, often reformatted by the server's own log handler).
STDIO_CHILD_ENV = "_REACH_OTEL_STDIO_CHILD"
PROBE_TIMEOUT_S = 1.0

# The SDK's export path logs here; records from the thread our exporter runs in become DEBUG.
_EXPORT_LOGGER_PREFIXES = ("opentelemetry.exporter", "urllib3")
_EXPORT_LOGGERS = ("opentelemetry.sdk._shared_internal", "opentelemetry.sdk.trace.export")


class RateLimitedWarning:
    """One WARNING per ``interval`` seconds at most; the lines in between go out at DEBUG."""

    def __init__(
        self, interval: float = WARN_INTERVAL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.interval = interval
        self._clock = clock
        self._quiet = os.environ.get(STDIO_CHILD_ENV) == "1"
        self._last: float | None = None
        self._lock = threading.Lock()

    def due(self) -> bool:
        """Whether the next line would be a WARNING (to skip working out its details otherwise)."""
        return not self._quiet and (self._last is None or self._clock() - self._last >= self.interval)

    def __call__(self, msg: str, *args: Any) -> None:
        now = self._clock()
        with self._lock:
            loud = not self._quiet and (self._last is None or now - self._last >= self.interval)
            if loud:
                self._last = now
        logger.log(logging.WARNING if loud else logging.DEBUG, msg, *args)


class _QuietExport(logging.Filter):
    """Demotes the SDK's export-path records to DEBUG while our exporter runs in the current thread.

    The first such record of an export also tells that exporter the export is in trouble (a retry
    is coming, or it failed), before the SDK's retries are over.
    """

    def __init__(self) -> None:
        super().__init__()
        self._local = threading.local()

    @contextmanager
    def during(self, on_trouble: Callable[[str], None]) -> Iterator[None]:
        previous = getattr(self._local, "on", False), getattr(self._local, "on_trouble", None)
        self._local.on, self._local.on_trouble = True, on_trouble
        try:
            yield
        finally:
            self._local.on, self._local.on_trouble = previous

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(self._local, "on", False) or record.levelno <= logging.DEBUG:
            return True
        on_trouble, self._local.on_trouble = self._local.on_trouble, None
        if on_trouble is not None:
            try:
                on_trouble(record.getMessage()[:200])
            except Exception:  # a record whose arguments do not format, or a failing hook: still noise
                logger.debug("reach_otel: export trouble hook failed", exc_info=True)
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        # Handlers check only their own level: drop the record unless its logger wants DEBUG.
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


_QUIET = _QuietExport()


def _install_quiet_filter(exporter: object) -> None:
    """Quiet the export-path loggers of ``exporter`` (a span or a log record exporter)."""
    names = {type(exporter).__module__, *_EXPORT_LOGGERS}
    names.update(n for n in logging.Logger.manager.loggerDict if n.startswith(_EXPORT_LOGGER_PREFIXES))
    for name in names:
        target = logging.getLogger(name)
        if _QUIET not in target.filters:
            target.addFilter(_QUIET)


def connection_refused(endpoint: str, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """True when nothing listens at the endpoint (refused, unresolvable or unreachable): sending is futile.

    A connection that opens, or one that times out, is not refused: the export gets its chance. Behind
    an HTTP proxy the collector cannot be probed, so it is never called refused.
    """
    try:
        parts = urlsplit(endpoint)
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
        if not host or (
            urllib.request.getproxies().get(parts.scheme) and not urllib.request.proxy_bypass(host)
        ):
            return False
        with socket.create_connection((host, port), timeout=timeout):
            return False
    except TimeoutError:
        return False
    except OSError:
        return True
    except Exception:  # a malformed endpoint: let the exporter report it
        return False


class CountingExporter(SpanExporter):
    """Wraps the OTLP exporter: counts spans it failed to send, keeps its retries quiet, can be abandoned."""

    def __init__(
        self, inner: SpanExporter, endpoint: str | None, warn: RateLimitedWarning | None = None
    ) -> None:
        self.inner = inner
        #: The OTLP endpoint ``init()`` made the exporter for; None for an application's own
        #: exporter, whose destination reach_otel does not know and so never probes.
        self.endpoint = endpoint
        self.destination = endpoint or type(inner).__name__
        self.warn = warn or RateLimitedWarning()
        self.failed = 0
        self.in_flight = 0
        self.failing = False
        self.abandoned = False
        self.on_failure: Callable[[], None] | None = None
        self._error: str | None = None
        self._lock = threading.Lock()
        self._shut = False
        _install_quiet_filter(inner)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        n = len(spans)
        with self._lock:
            if self.abandoned:
                self.failed += n
                return SpanExportResult.FAILURE
            self.in_flight = n
        self._error = None
        with _QUIET.during(self._trouble):
            try:
                result = self.inner.export(spans)
            except Exception:  # an exporter that raises is one that failed
                logger.debug("reach_otel: the span exporter raised", exc_info=True)
                result = SpanExportResult.FAILURE
        ok = result is SpanExportResult.SUCCESS
        with self._lock:
            self.in_flight = 0
            if not ok:
                self.failed += n
            self.failing = not ok
        if not ok:
            self._report(n, self._error)
            if self.on_failure is not None:
                self.on_failure()
        return result

    def _trouble(self, message: str) -> None:
        """The SDK exporter logged a retry or a failure. A collector that refuses connections is
        treated as failing at once; one that answers (429/503 under load) gets its retries first."""
        self._error = message
        if self.failing or not self.refused():
            return
        self.failing = True
        self.warn(
            "reach_otel: the collector at %s does not take spans (connection refused); they wait in a "
            "small bounded queue meanwhile. Retrying quietly, details at DEBUG.",
            self.endpoint,
        )
        if self.on_failure is not None:
            self.on_failure()

    def _reason(self, error: str | None) -> str:
        if self.warn.due() and self.refused():
            return "connection refused"
        return error or "export failed"

    def refused(self) -> bool:
        """Whether nothing listens at our OTLP endpoint (never, for an exporter of the application's)."""
        return self.endpoint is not None and connection_refused(self.endpoint)

    def _report(self, n: int, error: str | None) -> None:
        self.warn(
            "reach_otel: could not export %d spans to %s (%s); %d spans not delivered so far. "
            "Retrying quietly, details at DEBUG.",
            n,
            self.destination,
            self._reason(error),
            self.failed,
        )

    def abandon(self) -> None:
        """Stop sending: what is in flight gives up its retries, what comes next fails at once."""
        with self._lock:
            self.abandoned = True
        self.shutdown()

    def shutdown(self) -> None:
        with self._lock:
            if self._shut:
                return
            self._shut = True
        with _QUIET.during(lambda message: None):
            try:
                self.inner.shutdown()
            except Exception:
                logger.debug("reach_otel: exporter shutdown failed", exc_info=True)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


def _default_queue_size() -> int | None:
    """Ours unless ``OTEL_BSP_MAX_QUEUE_SIZE`` is set (then the SDK reads it)."""
    return None if os.environ.get("OTEL_BSP_MAX_QUEUE_SIZE") else DEFAULT_MAX_QUEUE_SIZE


def sdk_queue(processor: Any) -> deque[Any] | None:
    """The SDK batcher's bounded deque of ended spans (new on the left, oldest on the right): a
    ``BatchProcessor``'s ``_queue`` from opentelemetry-sdk 1.34, the processor's own ``queue``
    before. None, said once at WARNING, for a layout neither: its drops then go uncounted."""
    batcher = getattr(processor, "_batch_processor", None)
    for queue in (getattr(batcher, "_queue", None), getattr(processor, "queue", None)):
        if isinstance(queue, deque):
            return queue
    logger.warning(
        "reach_otel: this opentelemetry-sdk keeps its span queue where reach_otel does not look; "
        "spans it drops when the queue is full are not counted in dropped_spans()"
    )
    return None


class ReachBatchSpanProcessor(BatchSpanProcessor):
    """The SDK's batching processor (export off the hot path) with a burst-proof queue that counts drops.

    It reads the SDK batcher's queue (a bounded deque) to drop and count instead of letting the SDK
    log a warning per drop; while exports fail it keeps at most ``OUTAGE_QUEUE_SIZE`` spans.
    """

    def __init__(self, exporter: CountingExporter, **kwargs: Any) -> None:
        kwargs.setdefault("max_queue_size", _default_queue_size())
        super().__init__(exporter, **kwargs)
        self.exporter = exporter
        self.queue_dropped = 0
        self._drop_lock = threading.Lock()
        self._queue = sdk_queue(self)
        maxlen = self._queue.maxlen if self._queue is not None else None
        self._max = maxlen if isinstance(maxlen, int) else None
        self._outage_max = min(OUTAGE_QUEUE_SIZE, self._max) if self._max is not None else None
        self._closed = False
        exporter.on_failure = self._trim

    def on_end(self, span: ReadableSpan) -> None:
        if not (span.context and span.context.trace_flags.sampled):
            return
        queue = self._queue
        if self._closed:
            self._drop(1)
            return
        if queue is not None and self._max is not None:
            limit = self._outage_max if self.exporter.failing else self._max
            if len(queue) >= limit:  # type: ignore[operator]
                self._drop(1)
                self.exporter.warn(
                    "reach_otel: the span queue is full (%d spans; is %s down or slow?); "
                    "%d spans not delivered so far",
                    len(queue),
                    self.exporter.destination,
                    self.dropped,
                )
                return
        super().on_end(span)

    def _drop(self, n: int) -> None:
        with self._drop_lock:  # taken only on the path that drops
            self.queue_dropped += n

    def _trim(self) -> None:
        """Once an export is in trouble, keep only the newest ``OUTAGE_QUEUE_SIZE`` spans.

        Runs inside ``export()``, which the batcher calls under its export lock, so no other
        consumer pops the queue meanwhile; the app only appends on the other end.
        """
        queue, keep = self._queue, self._outage_max
        if queue is None or keep is None:
            return
        trimmed = 0
        try:
            while len(queue) > keep:
                queue.pop()  # the oldest are on the right
                trimmed += 1
        except IndexError:
            pass
        self._drop(trimmed)

    @property
    def pending(self) -> int:
        """Spans queued or being sent right now."""
        return (len(self._queue) if self._queue is not None else 0) + self.exporter.in_flight

    @property
    def dropped(self) -> int:
        """Spans that were not (or, once abandoned, will not be) delivered."""
        lost = self.queue_dropped + self.exporter.failed
        return lost + self.pending if self.exporter.abandoned else lost

    def _futile(self) -> bool:
        return self.pending > 0 and self.exporter.refused()

    def force_flush(self, timeout_millis: int | None = None) -> bool:
        if self._futile():
            return False
        return super().force_flush(timeout_millis)

    def shutdown(self) -> None:
        self._closed = True
        if self._futile():
            self.exporter.warn(
                "reach_otel: the collector at %s refuses connections; %d spans were not exported",
                self.exporter.endpoint,
                self.pending + self.queue_dropped + self.exporter.failed,
            )
            self.exporter.abandon()
        super().shutdown()  # type: ignore[no-untyped-call]

    def give_up(self, timeout_s: float) -> None:
        """The bounded shutdown ran out of time: count what is left as lost and stop retrying."""
        self.exporter.abandon()
        self.exporter.warn(
            "reach_otel: span export did not finish within %.1fs; giving up (%d spans not exported)",
            timeout_s,
            self.dropped,
        )

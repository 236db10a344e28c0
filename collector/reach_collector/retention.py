"""Retention: a background thread that asks the writer to drop spans older than `retention`."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from reach_collector.ingest.writer import Writer, WriterClosed

log = logging.getLogger(__name__)


class RetentionJob:
    def __init__(
        self,
        writer: Writer,
        retention_s: float,
        clock: Callable[[], float],
        every_s: float | None = None,
    ) -> None:
        """``every_s``: how often to run; by default a quarter of the window, within 10 s .. 10 min,
        so a short window stays short (and the store's size flat)."""
        self._writer = writer
        self.retention_s = retention_s
        self._clock = clock
        self._every = every_s if every_s is not None else min(600.0, max(10.0, retention_s / 4))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def run_once(self) -> int:
        """Delete what is older than the retention window now; returns the spans removed."""
        cutoff_ns = int((self._clock() - self.retention_s) * 1e9)
        deleted: int = self._writer.call(lambda store: store.delete_older_than(cutoff_ns)).result()
        if deleted:
            log.info("retention: removed %d span(s) older than %.0fs", deleted, self.retention_s)
        return deleted

    def _loop(self) -> None:
        # First pass right away (a collector restarted after a week away), then periodically.
        while True:
            try:
                self.run_once()
            except WriterClosed:
                return
            except Exception:
                log.exception("retention run failed; will retry")
            if self._stop.wait(self._every):
                return

    def start(self) -> None:
        if self.retention_s <= 0 or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, name="reach-collector-retention", daemon=True)
        self._thread.start()

    def stop(self, *_: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

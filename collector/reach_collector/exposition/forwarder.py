"""The commits' rows handed to ``/metrics``'s bookkeeping on a thread of its own, so that work —
folding counters, and the store lookups that wait for a handoff's or an LLM call's other span —
never delays an acknowledgement (a 200 waits only for the store's commit). As Tempo's
metrics-generator is fed: a bounded queue, one worker, batches in commit order; a batch that
finds the queue full is dropped and counted, never waited for. A scrape first waits (bounded) for
what was queued before it, so whoever got a 200 sees the spans in ``/metrics``.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Forwarder"]

log = logging.getLogger(__name__)
T = TypeVar("T")


class Forwarder(Generic[T]):
    """``fold(item)`` for each submitted item, in order, on one daemon thread (started with the
    first item). ``submit`` never blocks; ``drain`` waits for what was submitted before it."""

    def __init__(self, fold: Callable[[T], None], max_pending: int = 1024, name: str = "forwarder") -> None:
        self._fold = fold
        self._max = max_pending
        self._name = name
        self._queue: deque[T] = deque()
        self._cond = threading.Condition()
        self._submitted = 0
        self._done = 0
        self.dropped = 0  # items that found the queue full
        self._thread: threading.Thread | None = None

    def submit(self, item: T) -> bool:
        """Queue ``item``; False (and counted in ``dropped``) when ``max_pending`` are waiting."""
        with self._cond:
            if len(self._queue) >= self._max:
                self.dropped += 1
                return False
            self._queue.append(item)
            self._submitted += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._cond.notify_all()
        return True

    def drain(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` until every item submitted before this call is folded."""
        with self._cond:
            target = self._submitted
            return self._cond.wait_for(lambda: self._done >= target, timeout_s)

    @property
    def pending(self) -> int:
        with self._cond:
            return self._submitted - self._done

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._queue))
                item = self._queue.popleft()
            try:
                self._fold(item)
            except Exception:  # bookkeeping must never stop: the next batch is folded as usual
                log.exception("%s: folding a batch failed", self._name)
            finally:
                with self._cond:
                    self._done += 1
                    self._cond.notify_all()

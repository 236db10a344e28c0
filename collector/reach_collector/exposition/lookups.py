"""Where ``/metrics``' store lookups run: one worker thread behind a bounded queue, so the writer
thread, which acknowledges ingest requests, never waits for a lookup's SQL (``LookupWorker``); or
at once on the caller's thread (``Inline``, for a part used on its own).

A full queue drops the lookup and counts it: the spans it was for stay pending until a later batch
settles them or their deadline expires them, as a lookup that found nothing would leave them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Protocol

__all__ = ["Inline", "LookupWorker", "Lookups"]

log = logging.getLogger(__name__)

Job = Callable[[], None]


class Lookups(Protocol):
    """Runs lookup jobs; ``submit`` never blocks and says whether the job was taken."""

    @property
    def dropped(self) -> int: ...

    def submit(self, job: Job) -> bool: ...

    def drain(self, timeout_s: float) -> bool: ...

    def close(self, timeout_s: float = 5.0) -> None: ...


class Inline:
    """Runs each job at once, on the caller's thread."""

    dropped = 0

    def submit(self, job: Job) -> bool:
        _run(job)
        return True

    def drain(self, timeout_s: float) -> bool:
        return True

    def close(self, timeout_s: float = 5.0) -> None:
        return None


class LookupWorker:
    """One daemon thread (started by the first job) taking jobs from a queue of at most
    ``max_queued``, in order."""

    def __init__(self, max_queued: int = 64, name: str = "reach-collector-lookups") -> None:
        self._max = max_queued
        self._jobs: deque[Job] = deque()
        self._taken = 0  # jobs queued since start
        self._ran = 0  # of those, run (in order: one thread)
        self._cond = threading.Condition()
        self._closed = False
        self._dropped = 0
        self._name = name
        self._thread: threading.Thread | None = None  # started by the first job

    @property
    def dropped(self) -> int:
        """Jobs refused because the queue was full (or the worker closed)."""
        return self._dropped

    @property
    def running(self) -> bool:
        """The worker thread is alive (until ``close``)."""
        return self._thread is not None and self._thread.is_alive()

    def submit(self, job: Job) -> bool:
        with self._cond:
            if self._closed or len(self._jobs) >= self._max:
                self._dropped += 1
                if self._dropped & (self._dropped - 1) == 0:  # the 1st, 2nd, 4th, 8th… drop
                    log.warning("metrics lookup queue full: %d lookups dropped so far", self._dropped)
                return False
            self._jobs.append(job)
            self._taken += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._cond.notify_all()
        return True

    def drain(self, timeout_s: float) -> bool:
        """Wait until every job submitted so far has run (not those submitted meanwhile, so a
        scrape during sustained ingest does not wait for ever); False if ``timeout_s`` passed."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            until = self._taken
            while self._ran < until:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True

    def close(self, timeout_s: float = 5.0) -> None:
        """Refuse new jobs, run the queued ones (for up to ``timeout_s``) and stop the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout_s)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._jobs and not self._closed:
                    self._cond.wait()
                if not self._jobs:
                    return
                job = self._jobs.popleft()
            _run(job)
            with self._cond:
                self._ran += 1
                self._cond.notify_all()


def _run(job: Job) -> None:
    try:
        job()
    except Exception:  # /metrics must never stop ingest or a scrape
        log.exception("metrics lookup failed")

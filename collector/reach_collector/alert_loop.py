"""The alert loop: a background thread that drives ``AlertEngine.tick``/``flush`` on the clock.

It evaluates every ``interval`` and, between evaluations, flushes due delivery retries at
``next_wakeup()``. Every exception is logged and the loop carries on: alerting must not die with
one bad evaluation or one broken receiver.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from reach_collector.alerting.evaluation.engine import AlertEngine

__all__ = ["AlertLoop"]

log = logging.getLogger("reach_collector.alerting")


class AlertLoop:
    def __init__(
        self,
        engine: AlertEngine,
        clock: Callable[[], float],
        *,
        min_sleep_s: float = 0.01,
        max_sleep_s: float = 5.0,
    ) -> None:
        self.engine = engine
        self._clock = clock
        self._min_sleep = min_sleep_s
        # Bounded, so a clock jump (or a wakeup that moved earlier) is noticed soon.
        self._max_sleep = min(max_sleep_s, engine.interval_s)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.ticks = 0
        self.errors = 0

    def step(self) -> float:
        """One pass: evaluate if an interval has passed, else flush due retries; returns how long
        to sleep before the next pass."""
        engine = self.engine
        now = self._clock()
        try:
            if engine.last_tick is None or now >= engine.last_tick + engine.interval_s:
                engine.tick(now)
                self.ticks += 1
            else:
                engine.flush(now)
        except Exception:  # the loop must survive anything one pass throws
            self.errors += 1
            log.exception("alert loop: evaluation or delivery failed; continuing")
        try:
            wake = engine.next_wakeup()
        except Exception:
            log.exception("alert loop: next_wakeup failed")
            wake = None
        delay = self._max_sleep if wake is None else wake - self._clock()
        return min(max(delay, self._min_sleep), self._max_sleep)

    def _run(self) -> None:
        while not self._stop.is_set():
            delay = self.step()
            if self._stop.wait(delay):
                return

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="reach-collector-alerts", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning("alert loop: still busy after %.0fs at shutdown", timeout)

"""Handing the memory of large request bodies back to the system once none is held.

glibc keeps freed blocks of a few MiB in its heap (it raises its mmap threshold after the first
large free), so after a flood of 15 MiB uploads the collector's RSS stayed up by the whole flood.
``malloc_trim`` returns those pages; it is called only after the bytes held in flight reached
``threshold`` (a quarter of the bound; ordinary ingest holds far less), off the event loop, at most
once per ``min_interval_s``.
Elsewhere than glibc it does nothing.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
import threading
import time
from collections.abc import Callable
from typing import Final

log = logging.getLogger(__name__)

DEFAULT_THRESHOLD: Final = 64 << 20


def _malloc_trim() -> Callable[[], None] | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        trim = libc.malloc_trim
    except (OSError, AttributeError, TypeError):  # not glibc (musl, macOS): nothing to hand back
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: trim(0)


class Trimmer:
    """``held(n)`` after each reservation, ``idle()`` when nothing is held any more."""

    def __init__(
        self,
        threshold: int = DEFAULT_THRESHOLD,
        min_interval_s: float = 1.0,
        trim: Callable[[], None] | None = None,
    ) -> None:
        self.threshold = threshold
        self.min_interval_s = min_interval_s
        self._trim = trim if trim is not None else _malloc_trim()
        self._peak = 0  # the most held since the last trim
        self._last = 0.0
        self._scheduled = False
        self.trims = 0

    def held(self, size: int) -> None:
        if size > self._peak:
            self._peak = size

    def idle(self) -> None:
        if self._trim is None or self._peak < self.threshold or self._scheduled:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # called outside the event loop (a test's direct call): trim now
            self._run()
            return
        self._scheduled = True
        delay = max(0.0, self._last + self.min_interval_s - time.monotonic())
        loop.call_later(delay, self._start)

    def _start(self) -> None:
        # A thread, not the loop: the trim walks the whole heap (milliseconds after a flood).
        threading.Thread(target=self._run, name="reach-collector-trim", daemon=True).start()

    def _run(self) -> None:
        self._peak = 0
        try:
            if self._trim is not None:
                self._trim()
                self.trims += 1
        except Exception:  # never let a housekeeping call break ingest
            log.debug("malloc_trim failed", exc_info=True)
        finally:
            self._last = time.monotonic()
            self._scheduled = False

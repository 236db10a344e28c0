"""Ingest's threads run at a lower CPU priority than those that answer queries (SPEC §7: trace by id
in under 20 ms while ingest runs).

On a machine with few cores, ingest (decoding, the writer's commits and checkpoints) keeps every
core busy; a trace lookup then waits for CPU behind it, and its latency is set by the scheduler,
not by the query. Ingest that runs at a higher nice value gives way to the lookup whenever both
want a core, and has the cores to itself otherwise: its throughput is what is left once queries
are answered. Linux sets a nice value per thread; elsewhere ``setpriority`` on a thread id would
name another process, so there the threads keep the process's priority.

A nice value weighs a thread against the others of its scheduling group: a service or container
(its own cgroup, or its own session's autogroup) shares the machine with other groups as before,
and only its own threads are ordered. Where the collector shares one group with busy programs of
equal priority (started from the same shell as a CPU-bound job, say), its ingest gives way to them
too.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from typing import Final

log = logging.getLogger(__name__)

# Nice value added to ingest's threads and decoder processes: a thread at +10 gets about a tenth
# of a core's time against one at +0 that wants the same core (the kernel's weights: 110 to 1024).
BACKGROUND_NICE: Final = 10


def lower_this_thread(nice: int = BACKGROUND_NICE) -> None:
    """Make the calling thread ``nice`` steps less urgent (up to the floor, 19). A no-op where
    priorities are not per thread, or where the system refuses."""
    if nice <= 0 or not sys.platform.startswith("linux"):
        return
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice))
    except OSError as exc:  # a sandbox may forbid it: ingest then runs at the process's priority
        log.debug("could not lower an ingest thread's priority: %s", exc)


def thread_nice() -> int:
    """The calling thread's nice value (Linux), else the process's."""
    who = threading.get_native_id() if sys.platform.startswith("linux") else 0
    return os.getpriority(os.PRIO_PROCESS, who)

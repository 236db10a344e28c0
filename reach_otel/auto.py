"""Zero-code start-up: ``init()`` plus every available instrumentor, for ``reach-otel run``.

Runs inside the application's own interpreter (through the bootstrap ``sitecustomize``), so it
must never fail the program it starts: every step is guarded.
"""

from __future__ import annotations

import os

from reach_otel._safety import logger

AUTO_ENV = "REACH_OTEL_AUTO"


def start() -> list[str]:
    """Configure tracing and apply the instrumentors; returns the instrumentation names applied."""
    if os.environ.get("_REACH_OTEL_AUTO_STARTED") == str(os.getpid()):
        return []
    os.environ["_REACH_OTEL_AUTO_STARTED"] = str(os.getpid())
    try:
        from reach_otel.instrumentation import instrument
        from reach_otel.setup import init

        init()
        applied = instrument()
        logger.debug("reach_otel: auto-instrumented %s", ", ".join(applied))
        return applied
    except Exception:  # the application starts regardless
        logger.warning("reach_otel: auto-instrumentation failed", exc_info=True)
        return []

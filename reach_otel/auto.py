"""Zero-code start-up for ``reach-otel run``: ``init()``, the instrumentors, and the one line saying so.

Runs inside the application's own interpreter (through the bootstrap ``sitecustomize``), so it
must never fail the program it starts: every step is guarded.
"""

from __future__ import annotations

import os
import sys

from reach_otel._safety import logger

AUTO_ENV = "REACH_OTEL_AUTO"
#: Set by ``reach-otel run`` for the program it starts, which prints the start-up line and drops it,
#: so that the program's own child processes (instrumented too: they inherit the environment) stay quiet.
ANNOUNCE_ENV = "_REACH_OTEL_RUN_ANNOUNCE"

_started = False  # per interpreter: an exec'd program is a new interpreter and starts again


def start() -> list[str]:
    """Configure tracing and apply the instrumentors; returns the instrumentation names applied."""
    global _started
    if _started:
        return []
    _started = True
    announce = os.environ.pop(ANNOUNCE_ENV, None) == "1"
    try:
        from reach_otel.config import env_bool
        from reach_otel.instrumentation import auto_instrument
        from reach_otel.lifecycle import init

        # What init() would apply, but here, to say which in the start-up line.
        wanted = init(instrument=False) is not None and env_bool("REACH_OTEL_INSTRUMENT", True)
        applied = auto_instrument() if wanted else []
        logger.debug("reach_otel: auto-instrumented %s", ", ".join(applied))
    except Exception:  # the application starts regardless
        logger.warning("reach_otel: auto-instrumentation failed", exc_info=True)
        return []
    if announce:
        try:
            print(startup_line(applied), file=sys.stderr, flush=True)
        except Exception:  # a closed stderr must not stop the program
            logger.debug("reach_otel: cannot print the start-up line", exc_info=True)
    return applied


def startup_line(applied: list[str]) -> str:
    """``reach-otel run: spans to URL as SERVICE; instrumented: ...; on import: ...; targets: ...``."""
    from reach_otel.config import load_settings
    from reach_otel.instrumentation import waiting
    from reach_otel.instrumentation.declarative.config import KINDS, load_config

    settings = load_settings()
    if settings.disabled:
        where = "OTEL_SDK_DISABLED is set, no spans are exported"
    else:
        where = f"spans to {settings.endpoint} as {settings.service_name or 'unknown_service'}"
    config = load_config()
    listed = [(kind, getattr(config, kind)) for kind in KINDS]
    targets = [f"{kind} {', '.join(map(str, found))}" for kind, found in listed if found]
    later = [n for n in applied if n in waiting()]
    now = [n for n in applied if n not in later]
    return (
        f"reach-otel run: {where}; instrumented: {', '.join(now) or 'none'}"
        + (f"; on import: {', '.join(later)}" if later else "")
        + f"; targets: {'; '.join(targets) or 'none'}"
    )

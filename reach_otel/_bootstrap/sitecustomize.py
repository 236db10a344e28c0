"""Loaded by Python at start-up for programs run under ``reach-otel run``: applies reach_otel.

The ``reach-otel`` command itself is skipped: a program under ``reach-otel run`` that starts
``reach-otel run -- python child.py`` passes the environment on, and only the child is the app.
"""

import itertools
import os
import sys


def _is_reach_otel_command() -> bool:
    argv = list(getattr(sys, "orig_argv", None) or sys.argv)
    if os.path.basename(sys.argv[0] if sys.argv else "") in ("reach-otel", "reach-otel.exe"):
        return True
    return any(a == "-m" and b in ("reach_otel", "reach_otel.cli") for a, b in itertools.pairwise(argv))


if os.environ.get("REACH_OTEL_AUTO") == "1" and not _is_reach_otel_command():
    try:
        from reach_otel.auto import start

        start()
    except Exception:  # never stop the program from starting
        pass

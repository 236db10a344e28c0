"""Loaded by Python at start-up for programs run under ``reach-otel run``: applies reach_otel."""

import os

if os.environ.get("REACH_OTEL_AUTO") == "1":
    try:
        from reach_otel.auto import start

        start()
    except Exception:  # never stop the program from starting
        pass

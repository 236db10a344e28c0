"""One measured app under one tracer, in its framework's environment, driven by ``run.py`` over pipes.

    python worker.py FRAMEWORK TRACER

Reads one JSON command a line on stdin and answers one JSON line on the stdout it was started with
(the app's own prints go to stderr): ``{"do": "time", "runs": N}`` → CPU seconds per request of N
requests (this process's CPU, the exporter thread's included, and for MCP the server's; spans
flushed inside the window); ``{"do": "probe"}`` → what one request's spans show
(:func:`shape.summarise`) and how many units (nodes, tasks, tool calls) a request is.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any, Protocol

import fake_transport
import tracing


class App(Protocol):
    agents: list[str]

    def request(self) -> None: ...

    def run(self, runs: int) -> None: ...

    def units(self) -> dict[str, float]: ...

    def extra_cpu(self) -> float: ...

    def callers(self, system_prompts: list[str]) -> list[str] | None: ...

    def probe_extra(self, capture: tracing.Capture | None, flush: Callable[[], None]) -> dict[str, Any]: ...


def main(framework: str, tracer: str) -> None:
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # frameworks print (CrewAI's banners): keep them off the protocol
    provider, capture, failed = tracing.setup(tracer, framework)
    app: App = importlib.import_module(f"app_{framework}").App(tracer)

    def answer(payload: dict[str, Any]) -> None:
        protocol.write(json.dumps(payload) + "\n")

    def flush() -> None:
        if provider is not None:
            provider.force_flush()

    answer({"ready": True, "instrument_error": failed})
    for line in sys.stdin:
        command = json.loads(line)
        if command["do"] == "time":
            runs = int(command["runs"])
            start, extra = time.process_time(), app.extra_cpu()
            app.run(runs)
            flush()
            spent = time.process_time() - start + app.extra_cpu() - extra
            answer({"cpu_s": spent / runs})
        elif command["do"] == "probe":
            units = app.units()  # may run the app once more: its spans are flushed before keeping
            flush()
            if capture is not None:
                capture.keep()
            prompts: list[str] = []
            fake_transport.SYSTEM_PROMPTS.append(prompts)
            try:
                app.request()
            finally:
                fake_transport.SYSTEM_PROMPTS.remove(prompts)
            flush()
            spans = capture.take() if capture is not None else []
            import shape

            answer(
                {
                    "shape": shape.summarise(
                        spans, app.agents, callers=app.callers(prompts), marker=getattr(app, "marker", None)
                    ),
                    "units": units,
                    **app.probe_extra(capture, flush),
                    "instrument_error": failed,
                }
            )
        else:
            break
    flush()
    close = getattr(app, "close", None)
    if close is not None:
        close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

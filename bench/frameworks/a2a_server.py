"""The A2A agent the A2A app sends to: the tests' scripted ``billing`` agent (a2a-sdk under uvicorn),
traced by the tracer named in ``BENCH_TRACER``, with three bench routes beside the agent's own.

    BENCH_TRACER=reach python a2a_server.py PORT

``/bench/cpu`` (this process's CPU seconds), ``/bench/keep`` and ``/bench/take`` (this side's spans of
a probe). The message ``outcome=headers ...`` completes a task whose text is the trace headers the
agent received.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import tracing

provider, capture, failed = tracing.setup(os.environ.get("BENCH_TRACER", "none"), "a2a")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "instrumentation"))
import a2a_agents  # noqa: E402
import uvicorn  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402


async def cpu(request: Request) -> JSONResponse:
    return JSONResponse({"cpu_s": time.process_time()})


async def keep(request: Request) -> JSONResponse:
    if provider is not None and capture is not None:
        provider.force_flush()
        capture.keep()
    return JSONResponse({})


async def take(request: Request) -> JSONResponse:
    spans = []
    if provider is not None and capture is not None:
        provider.force_flush()
        spans = [{"name": s["name"], "trace_id": s["trace_id"]} for s in capture.take()]
    return JSONResponse({"spans": spans, "instrument_error": failed})


def main(port: int) -> None:
    app = a2a_agents.build_app("billing", port)
    for path, endpoint in (("/bench/cpu", cpu), ("/bench/keep", keep), ("/bench/take", take)):
        app.router.routes.insert(0, Route(path, endpoint))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(int(sys.argv[1]))

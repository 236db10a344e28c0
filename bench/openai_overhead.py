"""Per-call overhead of OpenAI chat-completions instrumentations, measured side by side.

Variants: no instrumentation; reach_otel's ``OpenAIInstrumentor``; the peers
``opentelemetry-instrumentation-openai-v2``, ``openinference-instrumentation-openai`` and
``opentelemetry-instrumentation-openai`` (traceloop). Each runs in its own worker subprocess — a
peer in its own virtualenv (created on demand under ``--venv-dir``, sharing this interpreter's
site-packages so every variant uses the same ``openai`` and OpenTelemetry releases). Workers are
driven round-robin, one at a time, in a shuffled order each round; each round measures sync,
async and streaming calls through the real ``openai`` client on an in-memory mock transport
returning a canned completion, with a TracerProvider + BatchSpanProcessor + discarding exporter.

    python bench/openai_overhead.py [--rounds 15] [--calls 200] [--venv-dir DIR]

Overhead is paired per round (variant − uninstrumented in the same round), then the median.
This file imports only the standard library at the top: it is also the worker script.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

MODES = ("sync", "async", "stream")
BASELINE = "none"
OURS = "reach_otel"
# variant → (pip requirements, None for this interpreter; "module:Class" of its instrumentor)
VARIANTS: dict[str, tuple[str | None, str | None]] = {
    BASELINE: (None, None),
    OURS: (None, "reach_otel.instrumentation.openai:OpenAIInstrumentor"),
    "openai-v2": (  # its 2.4b0 imports a module that opentelemetry-util-genai 1.2b0 removed
        "opentelemetry-instrumentation-openai-v2 opentelemetry-util-genai==1.1b0",
        "opentelemetry.instrumentation.openai_v2:OpenAIInstrumentor",
    ),
    "openinference": (
        "openinference-instrumentation-openai",
        "openinference.instrumentation.openai:OpenAIInstrumentor",
    ),
    "traceloop": (
        "opentelemetry-instrumentation-openai",
        "opentelemetry.instrumentation.openai:OpenAIInstrumentor",
    ),
}
PEERS = ("openai-v2", "openinference", "traceloop")

MESSAGES = [
    {"role": "system", "content": "You are the billing agent. Answer briefly."},
    {"role": "user", "content": "Where is my invoice for order 1234?"},
]
_USAGE = {"prompt_tokens": 19, "completion_tokens": 9, "total_tokens": 28}
COMPLETION = {
    "id": "chatcmpl-bench-1",
    "object": "chat.completion",
    "created": 1_700_000_000,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Your invoice 1234 was sent on Monday.",
                "refusal": None,
            },
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": _USAGE,
    "system_fingerprint": None,
}


def _sse() -> bytes:
    base = {"id": "chatcmpl-bench-2", "object": "chat.completion.chunk", "created": 1_700_000_000}
    base["model"] = "gpt-4o-mini"
    deltas = [{"role": "assistant", "content": ""}] + [
        {"content": w} for w in ("Your ", "invoice ", "1234 ", "was ", "sent ", "on ", "Monday.")
    ]
    chunks = [
        {**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}], "usage": None} for d in deltas
    ]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": None})
    chunks.append({**base, "choices": [], "usage": _USAGE})
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


# -- worker (runs in the variant's interpreter) ------------------------------------------------------
def _instrument(variant: str, provider: Any) -> None:
    target = VARIANTS[variant][1]
    if target is None:
        return
    import importlib

    module_name, _, cls_name = target.partition(":")
    getattr(importlib.import_module(module_name), cls_name)().instrument(tracer_provider=provider)


def _clients() -> tuple[Any, Any]:
    import openai

    try:  # current openai releases speak httpx2; older ones httpx
        import httpx2 as http
    except ImportError:
        import httpx as http  # type: ignore[no-redef]
    stream_body, completion = _sse(), json.dumps(COMPLETION).encode()

    def handler(request: Any) -> Any:
        streaming = b'"stream":true' in request.content.replace(b" ", b"")
        if streaming:
            return http.Response(200, headers={"content-type": "text/event-stream"}, content=stream_body)
        return http.Response(200, headers={"content-type": "application/json"}, content=completion)

    transport = http.MockTransport(handler)
    base_url, api_key = "http://bench.invalid/v1", "x"
    sync = openai.OpenAI(
        http_client=http.Client(transport=transport), base_url=base_url, api_key=api_key, max_retries=0
    )
    asynchronous = openai.AsyncOpenAI(
        http_client=http.AsyncClient(transport=transport), base_url=base_url, api_key=api_key, max_retries=0
    )
    return sync, asynchronous


def _batch(sync: Any, aclient: Any, loop: Any, calls: int) -> dict[str, float]:
    import gc

    create = {"model": "gpt-4o-mini", "messages": MESSAGES, "max_tokens": 64, "temperature": 0.2}
    stream_args = {**create, "stream": True, "stream_options": {"include_usage": True}}
    clock = time.perf_counter_ns

    def run_sync() -> list[int]:
        out = []
        for _ in range(calls):
            t0 = clock()
            sync.chat.completions.create(**create)
            out.append(clock() - t0)
        return out

    async def run_async() -> list[int]:
        out = []
        for _ in range(calls):
            t0 = clock()
            await aclient.chat.completions.create(**create)
            out.append(clock() - t0)
        return out

    def run_stream() -> list[int]:
        out = []
        for _ in range(calls):
            t0 = clock()
            for _chunk in sync.chat.completions.create(**stream_args):
                pass
            out.append(clock() - t0)
        return out

    result = {}
    for mode, fn in (
        ("sync", run_sync),
        ("async", lambda: loop.run_until_complete(run_async())),
        ("stream", run_stream),
    ):
        gc.collect()
        result[mode] = statistics.median(fn()) / 1000
    return result


def worker(variant: str) -> None:
    """Serve ``run N`` commands on stdin; answer JSON lines on the original stdout."""
    out: TextIO = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever a library prints goes to stderr, not into the protocol
    sys.stdout = sys.stderr
    import asyncio
    from importlib.metadata import version

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    exported = [0]

    class Discard(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            exported[0] += len(spans)
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Discard()))
    try:
        _instrument(variant, provider)
    except Exception as exc:  # the variant's library is missing or broken here: report and stop
        out.write(json.dumps({"ready": False, "error": f"{type(exc).__name__}: {exc}"}) + "\n")
        out.flush()
        return
    sync, aclient = _clients()
    loop = asyncio.new_event_loop()
    calls_made = 0
    versions = {p: version(p) for p in ("openai", "opentelemetry-sdk")}
    out.write(json.dumps({"ready": True, "versions": versions}) + "\n")
    out.flush()
    for line in sys.stdin:
        command = json.loads(line)
        if command["cmd"] == "run":
            timings = _batch(sync, aclient, loop, command["calls"])
            calls_made += 3 * command["calls"]
            out.write(json.dumps(timings) + "\n")
        elif command["cmd"] == "stop":
            provider.force_flush()
            out.write(json.dumps({"spans_per_call": exported[0] / max(calls_made, 1)}) + "\n")
            out.flush()
            break
        out.flush()


# -- orchestrator --------------------------------------------------------------------------------------
def ensure_venv(venv_dir: Path, name: str, requirements: str) -> Path | None:
    """A virtualenv for one peer (reusing this interpreter's site-packages), created once."""
    path = venv_dir / name
    python = path / "bin" / "python"
    stamp = path / ".installed"
    if stamp.exists() and stamp.read_text() == requirements:
        return python
    print(f"creating a virtualenv for {requirements} in {path} ...", file=sys.stderr, flush=True)
    steps = [
        [sys.executable, "-m", "venv", "--system-site-packages", str(path)],
        [str(python), "-m", "pip", "install", "-q", *requirements.split()],
    ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"  failed: {' '.join(step)}\n{done.stderr[-2000:]}", file=sys.stderr)
            return None
    stamp.write_text(requirements)
    return python


class Worker:
    def __init__(self, variant: str, python: str) -> None:
        self.variant = variant
        self.proc = subprocess.Popen(
            [python, str(Path(__file__).resolve()), "--worker", variant],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        hello = self._read()
        self.error: str | None = None if hello.get("ready") else str(hello.get("error", "did not start"))
        self.versions: dict[str, str] = hello.get("versions", {})

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        return json.loads(line) if line else {"ready": False, "error": "worker exited"}

    def send(self, command: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> dict[str, Any]:
        result = self.send({"cmd": "stop"}) if self.error is None else {}
        self.proc.wait(timeout=30)
        return result


def start_workers(names: list[str], venv_dir: Path) -> tuple[dict[str, Worker], dict[str, str]]:
    workers: dict[str, Worker] = {}
    missing: dict[str, str] = {}
    for name in names:
        package = VARIANTS[name][0]
        python: str | Path | None = sys.executable
        if package is not None:
            python = ensure_venv(venv_dir, name, package)
        if python is None:
            missing[name] = "install failed"
            continue
        w = Worker(name, str(python))
        if w.error is not None:
            missing[name] = w.error
            w.close()
        else:
            workers[name] = w
    return workers, missing


def report(
    samples: dict[str, dict[str, list[float]]],
    missing: dict[str, str],
    spans: dict[str, float],
    rounds: int,
    calls: int,
) -> str:
    base = samples[BASELINE]
    latency = {v: {m: statistics.median(s[m]) for m in MODES} for v, s in samples.items()}
    overhead = {
        v: {m: statistics.median(a - b for a, b in zip(s[m], base[m], strict=True)) for m in MODES}
        for v, s in samples.items()
    }
    peers = [p for p in PEERS if p in samples]
    best = {m: min((overhead[p][m] for p in peers), default=0.0) for m in MODES}
    cols = ("sync", "async", "stream")
    head = (
        f"{'variant':<14}|{'µs/call ' + '/'.join(cols):>27} |{'overhead µs':>24} |{'× none':>21}"
        f" |{'overhead ÷ best peer':>21} | spans/call"
    )
    lines = [head]
    for v in samples:
        lat = "".join(f"{latency[v][m]:>9.1f}" for m in MODES)
        if v == BASELINE:
            ovh, times, vs_best = f"{'-':>24}", f"{'-':>21}", f"{'-':>21}"
        else:
            ovh = "".join(f"{overhead[v][m]:>8.1f}" for m in MODES)
            times = "".join(f"{latency[v][m] / latency[BASELINE][m]:>7.2f}" for m in MODES)
            vs_best = "".join(
                f"{overhead[v][m] / best[m]:>7.2f}" if best[m] > 0 else f"{'-':>7}" for m in MODES
            )
        lines.append(f"{v:<14}|{lat} |{ovh} |{times} |{vs_best} | {spans.get(v, 0):.2f}")
    for v, why in missing.items():
        lines.append(f"{v:<16} not available: {why}")
    lines.append(f"rounds={rounds} calls/round/mode={calls}; latency = median of per-round medians")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=200, help="calls per mode per round")
    parser.add_argument("--warmup", type=int, default=200, help="calls per mode before the first round")
    parser.add_argument(
        "--venv-dir", type=Path, default=Path(tempfile.gettempdir()) / "reach-otel-bench-venvs"
    )
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated subset")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker)
        return 0
    names = [n.strip() for n in args.variants.split(",") if n.strip() in VARIANTS]
    if BASELINE not in names:
        names.insert(0, BASELINE)
    workers, missing = start_workers(names, args.venv_dir)
    versions = {json.dumps(w.versions, sort_keys=True) for w in workers.values()}
    if len(versions) > 1:
        print(f"warning: variants run different releases: {versions}", file=sys.stderr)
    samples: dict[str, dict[str, list[float]]] = {v: {m: [] for m in MODES} for v in workers}
    try:
        for w in workers.values():
            w.send({"cmd": "run", "calls": args.warmup})
        for r in range(args.rounds):
            order = list(workers)
            random.shuffle(order)
            for v in order:
                for m, us in workers[v].send({"cmd": "run", "calls": args.calls}).items():
                    samples[v][m].append(us)
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    finally:
        spans = {v: float(w.close().get("spans_per_call", 0.0)) for v, w in workers.items()}
    print(f"versions: {versions.pop() if len(versions) == 1 else versions}")
    print(report(samples, missing, spans, args.rounds, args.calls))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Frameworks and protocols, peers side by side: the same apps traced by reach_otel, OpenInference and
OpenLLMetry, and not traced at all.

Apps: the LangGraph supervisor with a react worker (handoffs both ways), the CrewAI billing crew
(delegation and a question to a coworker), an MCP client calling a tool of a stdio server in
another process (on the MCP SDK 2.x, and the peers again on 1.x, the SDK they were written for),
and an A2A message to an a2a-sdk agent in another process. Each (app, tracer) is a worker process
in the app's own environment (``envs.py``; built on first use, outside the checkout), all alive at
once. Per tracer, one probe request says what its spans show (``shape.py``); then paired rounds
send every worker the same batch of requests in turn, in a rotating order, and a tracer's overhead
in a round is its CPU time per request minus the uninstrumented worker's in the same round (the
median over rounds, per unit: node, task, tool call, A2A call). CPU time, not wall time: the
machine is shared. Spans go to a BatchSpanProcessor and a discarding exporter for every tracer.

    python bench/frameworks/run.py [--apps langgraph crewai mcp mcp1 a2a] [--rounds 11]
        [--scale 1.0] [--markdown]

Writes nothing into the repo; ``--markdown`` also prints the tables as markdown to paste.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import envs  # noqa: E402

LABELS = {
    "none": "uninstrumented",
    "sdk": "SDK's own tracing",
    "reach": "reach_otel",
    "openinference": "OpenInference",
    "openllmetry": "OpenLLMetry",
}


@dataclass(frozen=True)
class Bench:
    """One app: the environment it runs in, the worker's framework, the tracers, requests per batch."""

    env: str
    framework: str
    tracers: tuple[str, ...]
    runs: int
    title: str


PEERS = ("reach", "openinference", "openllmetry")
# Content as each records it by default (ours off, the peers' on), then the other way round.
CONTENT = ("reach:content", "openinference:nocontent", "openllmetry:nocontent")
APPS = {
    "langgraph": Bench(
        "langgraph", "langgraph", ("none", *PEERS, *CONTENT), 16, "LangGraph supervisor + react worker"
    ),
    "crewai": Bench("crewai", "crewai", ("none", *PEERS, *CONTENT), 4, "CrewAI billing crew with delegation"),
    "mcp": Bench("mcp", "mcp", ("none", "sdk", *PEERS), 300, "MCP tool call over stdio, SDK 2.x"),
    "mcp1": Bench("mcp1", "mcp", ("none", "sdk", *PEERS), 300, "MCP tool call over stdio, SDK 1.x"),
    "a2a": Bench("mcp", "a2a", ("none", "sdk", *PEERS), 60, "A2A message/send to another agent"),
}
VERSIONS = {
    "langgraph": ["langgraph", "langchain-core", "langgraph-supervisor"],
    "crewai": ["crewai", "openai"],
    "mcp": ["mcp", "a2a-sdk"],
    "mcp1": ["mcp"],
}
PEER_PACKAGES = [
    f"{prefix}-{name}"
    for prefix in (envs.OPENINFERENCE, envs.OPENLLMETRY)
    for name in ("langchain", "crewai", "openai", "mcp")
]


def worker_env(bench: Bench, home: Path) -> dict[str, str]:
    """This checkout importable, no inherited OTel or reach settings; CrewAI's own telemetry off."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OTEL_", "REACH_", "_REACH_", "OPENAI_", "PYTHON", "VIRTUAL_ENV", "CREWAI_"))
    }
    env["PYTHONPATH"] = str(HERE.parents[1])
    if bench.framework == "crewai":
        env.update(
            HOME=str(home),  # imported, CrewAI makes folders under the home folder
            CREWAI_STORAGE_DIR=str(home / "crewai-storage"),
            CREWAI_DISABLE_TELEMETRY="true",
            CREWAI_DISABLE_TRACKING="true",
            CREWAI_TRACING_ENABLED="false",
            CREWAI_DISABLE_VERSION_CHECK="true",
            CREWAI_TESTING="true",
        )
    return env


@dataclass
class Worker:
    tracer: str
    proc: subprocess.Popen[str]
    log: IO[str]
    ready: dict[str, Any] = field(default_factory=dict)

    def ask(self, command: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        return self.read()

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.log.flush()
            raise RuntimeError(f"worker {self.tracer} ended (exit {self.proc.wait()}); see {self.log.name}")
        return dict(json.loads(line))

    def stop(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.write(json.dumps({"do": "quit"}) + "\n")
                self.proc.stdin.close()
            self.proc.wait(60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait(10)
        self.log.close()


def start(bench: Bench, tracer: str, python: Path, home: Path) -> Worker:
    log = open(home / f"{bench.framework}-{bench.env}-{tracer}.log", "w")  # noqa: SIM115 (closed by stop())
    proc = subprocess.Popen(
        [str(python), str(HERE / "worker.py"), bench.framework, tracer],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env=worker_env(bench, home),
        cwd=home,
    )
    worker = Worker(tracer, proc, log)
    worker.ready = worker.read()
    return worker


def measure(bench: Bench, rounds: int, scale: float, home: Path) -> dict[str, Any]:
    python = envs.python(bench.env)
    runs = max(1, round(bench.runs * scale))
    workers = [start(bench, tracer, python, home) for tracer in bench.tracers]
    try:
        probes = {w.tracer: w.ask({"do": "probe"}) for w in workers}
        for w in workers:  # warm up every path before the timed rounds
            w.ask({"do": "time", "runs": max(1, runs // 2)})
        cpu: dict[str, list[float]] = {w.tracer: [] for w in workers}
        for r in range(rounds):
            order = workers[r % len(workers) :] + workers[: r % len(workers)]
            for w in order:
                cpu[w.tracer].append(float(w.ask({"do": "time", "runs": runs})["cpu_s"]))
    finally:
        for w in workers:
            w.stop()
    base = cpu["none"]
    out: dict[str, Any] = {"bench": bench, "runs": runs, "rounds": rounds, "tracers": {}}
    for tracer, values in cpu.items():
        overheads = [v - b for v, b in zip(values, base, strict=True)]
        quartiles = statistics.quantiles(overheads, n=4) if len(overheads) > 1 else [overheads[0]] * 3
        out["tracers"][tracer] = {
            "probe": probes[tracer],
            "cpu_ms": statistics.median(values) * 1e3,
            "overhead_ms": statistics.median(overheads) * 1e3,
            "overhead_iqr_ms": (quartiles[0] * 1e3, quartiles[2] * 1e3),
        }
    return out


def _yes(value: Any) -> str:
    return "yes" if value else "no"


def rows(result: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The side-by-side table of one app: a column per tracer."""
    tracers = result["tracers"]
    names = list(tracers)
    unit, per = next(iter(tracers["none"]["probe"]["units"].items()))
    oi = tracers.get("openinference", {}).get("overhead_ms")

    def each(fn: Any) -> list[str]:
        return [fn(tracers[t], tracers[t]["probe"], tracers[t]["probe"]["shape"]) for t in names]

    table = [
        ["instrumented", *each(lambda t, p, s: "—" if not p.get("instrument_error") else "no: " + _short(p))],
        ["spans / request (this side)", *each(lambda t, p, s: f"{s['spans']:.0f}")],
        ["traces / request", *each(lambda t, p, s: f"{s['traces']:.0f}")],
        ["agent spans", *each(lambda t, p, s: f"{s['agents']:.0f}")],
        ["LLM spans", *each(lambda t, p, s: f"{s['llm']:.0f}")],
        ["… under an agent span", *each(lambda t, p, s: f"{s['llm_under_agent_span']:.0f}")],
        ["… under the agent that called", *each(lambda t, p, s: f"{s['llm_under_named_agent']:.0f}")],
        ["tool spans", *each(lambda t, p, s: f"{s['tools']:.0f}")],
        ["handoff spans (hop counts)", *each(lambda t, p, s: f"{s['handoffs']:.0f} {s['hop_counts'] or ''}")],
        ["transfer / delegation tool spans", *each(lambda t, p, s: f"{s['transfer_tool_spans']:.0f}")],
        ["goto spans", *each(lambda t, p, s: f"{s['goto_spans']:.0f}")],
        ["spans holding the prompt's text", *each(lambda t, p, s: f"{s.get('content_spans', 0):.0f}")],
    ]
    if "ping_pong" in tracers["none"]["probe"] or any("ping_pong" in tracers[t]["probe"] for t in names):
        table.append(
            [
                "ping-pong loop detected",
                *each(lambda t, p, s: _yes(p.get("ping_pong", {}).get("loop_detected"))),
            ]
        )
    if any("one_trace" in tracers[t]["probe"] for t in names):
        table.append(["server spans / request", *each(lambda t, p, s: str(len(p.get("server_spans", []))))])
        table.append(
            ["one trace across the process boundary", *each(lambda t, p, s: _yes(p.get("one_trace")))]
        )
    table += [
        ["CPU / request (median)", *each(lambda t, p, s: f"{t['cpu_ms']:.2f} ms")],
        [
            f"overhead / {unit} ({per:g} per request)",
            *each(lambda t, p, s: "" if t is tracers["none"] else f"{t['overhead_ms'] / per * 1e3:+.0f} µs"),
        ],
        [
            "… middle half of the rounds",
            *each(lambda t, p, s: "" if t is tracers["none"] else _span(t["overhead_iqr_ms"], per)),
        ],
        [
            "overhead vs uninstrumented",
            *each(
                lambda t, p, s: (
                    "" if t is tracers["none"] else f"{t['overhead_ms'] / tracers['none']['cpu_ms']:+.0%}"
                )
            ),
        ],
    ]
    if oi is not None:
        table.append(
            [
                "overhead ÷ OpenInference's",
                *each(
                    lambda t, p, s: (
                        "" if t is tracers["none"] or abs(oi) < 1e-9 else f"{t['overhead_ms'] / oi:.2f}×"
                    )
                ),
            ]
        )
    return ["", *(label(t) for t in names)], table


def label(tracer: str) -> str:
    name, _, mode = tracer.partition(":")
    return LABELS[name] + {"content": " + content", "nocontent": " − content"}.get(mode, "")


def _span(iqr_ms: tuple[float, float], per: float) -> str:
    low, high = (v / per * 1e3 for v in iqr_ms)
    return f"{low:+.0f} … {high:+.0f} µs"


def _short(probe: dict[str, Any]) -> str:
    text = str(probe["instrument_error"]).split(" from ")[0]
    return text[:70]


def show(results: list[dict[str, Any]], markdown: bool, header: str) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=200)
    console.print(header)
    for result in results:
        head, table = rows(result)
        bench = result["bench"]
        title = f"{bench.title} — {result['rounds']} rounds × {result['runs']} requests"
        rich_table = Table(*head, title=title)
        for row in table:
            rich_table.add_row(*row)
        console.print(rich_table)
    if markdown:
        print(header)
        for result in results:
            head, table = rows(result)
            bench = result["bench"]
            print(f"\n**{bench.title}** ({result['rounds']} rounds × {result['runs']} requests)\n")
            print("| " + " | ".join(head) + " |")
            print("|" + "---|" * len(head))
            for row in table:
                print("| " + " | ".join(cell.replace("|", "/") for cell in row) + " |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--apps", nargs="+", default=list(APPS), choices=list(APPS))
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the requests per batch")
    parser.add_argument("--markdown", action="store_true", help="also print the tables as markdown")
    parser.add_argument("--json", type=Path, help="also write the raw results to this file")
    args = parser.parse_args(argv)
    import rich  # noqa: F401  (the tables need it: fail before the minutes of measuring, not after)

    results = []
    with tempfile.TemporaryDirectory(prefix="reach-frameworks-") as tmp:
        for key in args.apps:
            started = time.monotonic()
            results.append(measure(APPS[key], args.rounds, args.scale, Path(tmp)))
            print(f"{key}: {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    load = os.getloadavg()
    versions = {}
    for env in dict.fromkeys(APPS[key].env for key in args.apps):
        versions.update(
            {
                f"{k} ({env})" if env == "mcp1" else k: v
                for k, v in envs.versions(env, [*VERSIONS[env], *PEER_PACKAGES]).items()
            }
        )
    header = f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; " + ", ".join(
        f"{k} {v}" for k, v in sorted(versions.items())
    )
    if args.json is not None:
        raw = [{**r, "bench": r["bench"].__dict__} for r in results]
        args.json.write_text(json.dumps({"header": header, "results": raw}, indent=1))
    show(results, args.markdown, header)


if __name__ == "__main__":
    main()

"""Alert evaluation benchmark: one evaluation of every default rule (P0, P1, P2) over a DuckDB
store of 10 M multi-agent spans from 50 agents, with an hour of ``POST /api/heartbeats`` rows.

Spans are the metrics benchmark's vectorised Arrow batches (bench/metrics.py) with 50 agent names,
written through the store's own write path; each evaluation is
``engine.evaluator.evaluate(now, StoreAlertData(store, api_heartbeats=...))``, as the live loop does.

    python bench/alerts.py [--spans 10000000] [--runs 50] [--results bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

from reach_collector.alerting.evaluation.engine import build_engine
from reach_collector.alerting.inputs.store_data import StoreAlertData
from reach_collector.config import Settings
from reach_collector.store.duckdb_store import DuckDBStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from functools import partial

import metrics as spans_bench  # the sibling benchmark's span generator

from reach_collector.query.heartbeats import last_posted

S = 1_000_000_000
N_AGENTS = 50


def _heartbeats(store: DuckDBStore, now_ns: int) -> int:
    """Every agent beat every 30 s for the last hour, but agent-07 stopped 5 minutes ago."""
    rows = []
    for i in range(N_AGENTS):
        agent = spans_bench.AGENTS[i]
        for k in range(120):
            t = now_ns - k * 30 * S
            if agent == spans_bench.AGENTS[7] and k < 10:
                continue
            rows.append((agent, t, "support-app", None, None, None))
    store.append("heartbeats", rows)
    return len(rows)


def measure(db: Path, now_ns: int, runs: int) -> dict[str, Any]:
    store = spans_bench.served_store(db)
    out: dict[str, Any] = {"spans": store.count_spans(), "heartbeat rows": _heartbeats(store, now_ns)}
    data = StoreAlertData(store, api_heartbeats=partial(last_posted, store))
    engine = build_engine(Settings(db=str(db)), data)
    now = now_ns / S
    transitions = engine.evaluator.evaluate(now, data)
    out["alerts"] = sorted({(t.alertname, t.labels.get("agent", "")) for t in transitions})
    stats = data.agent_stats(now, 60)
    out["agents in window"] = len(stats)
    out["calls in window"] = sum(s.calls for s in stats.values())
    out["evaluate (P0+P1+P2)"] = spans_bench.time_runs(lambda: engine.evaluator.evaluate(now, data), runs)
    out["agent_stats 1m"] = spans_bench.time_runs(lambda: data.agent_stats(now, 60), runs)
    out["heartbeats (OTLP + API)"] = spans_bench.time_runs(lambda: data.heartbeats(now), runs)
    store.close()
    return out


def report(out: dict[str, Any], command: str, build_s: float) -> str:
    rows = [k for k, v in out.items() if isinstance(v, tuple)]
    lines = ["query".ljust(26) + "| p50 ms   | p99 ms"]
    lines += [f"{k.ljust(26)}| {out[k][0]:>8.2f} | {out[k][1]:>8.2f}" for k in rows]
    p50, p99 = out["evaluate (P0+P1+P2)"]
    met = "**Met**" if p99 < 200 else "**Not met**"
    fired = ", ".join(f"{name} {agent}" for name, agent in out["alerts"]) or "none"
    return "\n".join(
        [
            "## Alert evaluation",
            "",
            f"Command: `{command}` ({out['spans']:,} spans from {N_AGENTS} agents, written as Arrow "
            f"batches through `DuckDBStore.write` in {build_s:.0f} s; {out['heartbeat rows']:,} "
            "`POST /api/heartbeats` rows over the last hour; `now` = the newest span's end; "
            f"{out['agents in window']} agents and {out['calls in window']:,} agent calls in the "
            "1-minute window). One evaluation = every default rule through `StoreAlertData`: one "
            "windowed per-agent query shared by P0 and P1, one heartbeat query over spans and one "
            "over the heartbeats table.",
            "",
            "```",
            *lines,
            "```",
            "",
            f"Target (SPEC §7): one alert evaluation < 200 ms at 10 M spans and 50 agents. {met}: "
            f"p50 {p50:.1f} ms, p99 {p99:.1f} ms. First evaluation's transitions: {fired}.",
            "",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--results", type=Path, default=None, help="update this RESULTS.md section")
    args = parser.parse_args()
    # 50 agents: the generator's first agent triages every request, the others are targets.
    spans_bench.AGENTS = [f"agent-{i:02d}" for i in range(N_AGENTS)]
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "alerts.duckdb"
        last_end, build_s = spans_bench.build(db, args.spans)
        out = measure(db, last_end, args.runs)
    command = "python bench/alerts.py" + (f" --spans {args.spans}" if args.spans != 10_000_000 else "")
    section = report(out, command, build_s)
    print(section)
    if args.results is not None:
        spans_bench.write_results(args.results, section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

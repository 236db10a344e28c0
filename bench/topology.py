"""Topology benchmark (SPEC §7, §15): ``GET /api/topology``'s query over a 1-hour window, and one
evaluation of the edge-SLO and budget rules, on a DuckDB store of 10 M multi-agent spans from
50 agents with about 200 handoff edges.

Spans are the metrics benchmark's vectorised Arrow batches (bench/metrics.py) with 50 agent names
and each request's handing-off agent drawn from four, so the handoffs form 4 × 49 edges; written
through the store's own write path. The evaluation is ``Evaluator.evaluate(now,
StoreAlertData(...))`` over an edge SLO with the SRE Workbook's windows (1h/5m, 6h/30m, 3d/6h)
and a per-agent 1-day cost budget with its projection, as the live loop runs them.

    python bench/topology.py [--spans 10000000] [--runs 20] [--results bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from reach_collector import topology
from reach_collector.alerting.budget import BudgetRuleConfig, budget_rules
from reach_collector.alerting.edge_slo import EdgeSLORule, EdgeSLORuleConfig
from reach_collector.alerting.evaluator import Evaluator
from reach_collector.alerting.store_data import StoreAlertData

sys.path.insert(0, str(Path(__file__).resolve().parent))
import metrics as spans_bench  # the sibling benchmark's span generator

N_AGENTS = 50
SOURCES = 4  # agents that hand off: 4 sources × 49 targets
PRICES = {"fake-model": {"input": 0.15, "output": 0.6}}
_generate = spans_bench.batch


def batch(first: int, n: int, t0: int, rng: np.random.Generator) -> pa.Table:
    """The metrics benchmark's requests, each triaged (and handed off) by one of ``SOURCES`` agents."""
    table = _generate(first, n, t0, rng)
    names = np.array(spans_bench.AGENTS, dtype=object)
    source = names[rng.integers(0, SOURCES, n)][np.arange(table.num_rows) // spans_bench.N]
    triage = pc.equal(table.column("agent"), spans_bench.AGENTS[0]).to_numpy(zero_copy_only=False)
    for column in ("agent", "handoff_source"):
        values = table.column(column).to_numpy(zero_copy_only=False)
        keep = values == spans_bench.AGENTS[0] if column == "handoff_source" else triage
        values = np.where(keep, source, values)
        i = table.schema.get_field_index(column)
        table = table.set_column(i, column, pa.array(values, pa.string()))
    return table


def measure(db: Path, now_ns: int, runs: int) -> dict[str, Any]:
    store = spans_bench.served_store(db)
    out: dict[str, Any] = {"spans": store.count_spans()}
    body = topology.topology(store, now_ns, 3600, PRICES)
    out["nodes"], out["edges"] = len(body["nodes"]), len(body["edges"])
    out["handoffs in window"] = sum(e["handoffs"] for e in body["edges"])
    out["topology 1h"] = spans_bench.time_runs(lambda: topology.topology(store, now_ns, 3600, PRICES), runs)
    rules = [
        EdgeSLORule(EdgeSLORuleConfig("EdgeCommitSLO")),
        *budget_rules(BudgetRuleConfig("AgentBudget", per="agent", limit_usd=50.0)),
    ]
    now = now_ns / 1e9

    def evaluate() -> Any:
        # A fresh evaluator each time: every evaluation asks the store again (no state carried).
        return Evaluator(rules).evaluate(now, StoreAlertData(store, prices=PRICES))

    transitions = evaluate()
    out["alerts"] = sorted({(t.alertname, t.labels.get("agent", "")) for t in transitions})
    data = StoreAlertData(store, prices=PRICES)
    windows = tuple(sorted({w for pair in rules[0].windows for w in (pair.long_s, pair.short_s)}))
    out["edges over 3d"] = len(data.edge_stats(now, windows)[max(windows)])
    out["evaluate (edge SLO + budget)"] = spans_bench.time_runs(evaluate, runs)
    out["edge_stats (6 windows)"] = spans_bench.time_runs(lambda: data.edge_stats(now, windows), runs)
    out["spend per agent 1d"] = spans_bench.time_runs(lambda: data.spend(now, 86400.0, "agent"), runs)
    store.close()
    return out


def report(out: dict[str, Any], command: str, build_s: float) -> str:
    rows = [k for k, v in out.items() if isinstance(v, tuple)]
    lines = ["query".ljust(30) + "| p50 ms   | p99 ms"]
    lines += [f"{k.ljust(30)}| {out[k][0]:>8.2f} | {out[k][1]:>8.2f}" for k in rows]
    t50, t99 = out["topology 1h"]
    e50, e99 = out["evaluate (edge SLO + budget)"]
    fired = ", ".join(f"{name} {agent}" for name, agent in out["alerts"]) or "none"

    def verdict(p99: float) -> str:
        return "**Met**" if p99 < 200 else "**Not met**"

    return "\n".join(
        [
            "## Topology, edge SLOs and budgets",
            "",
            f"Command: `{command}` ({out['spans']:,} spans from {N_AGENTS} agents, each request handed off "
            f"by one of {SOURCES} agents to one of the other 49, written as Arrow batches through "
            f"`DuckDBStore.write` in {build_s:.0f} s; `now` = the newest span's end; the 1-hour topology "
            f"has {out['nodes']} nodes, {out['edges']} edges and {out['handoffs in window']:,} handoffs, "
            f"the 3-day edge-SLO window {out['edges over 3d']} edges). `topology 1h` is "
            "`reach_collector.topology.topology` (the `/api/topology` body: per-agent calls, p95, "
            "tokens and cost; per-edge outcomes by the §11 rule, p95 and loops). One evaluation = an "
            "edge SLO with the workbook's three window pairs (its six windows from one scan of the "
            "3-day window's handoffs) and a per-agent 1-day cost budget with its projection, through "
            "`StoreAlertData`, a fresh evaluator each time.",
            "",
            "```",
            *lines,
            "```",
            "",
            f"Targets (SPEC §7): topology at 10 M spans, 1-hour window < 200 ms — {verdict(t99)}: p50 "
            f"{t50:.1f} ms, p99 {t99:.1f} ms. One evaluation of edge-SLO and budget rules for 50 agents "
            f"/ 200 edges < 200 ms — {verdict(e99)}: p50 {e50:.1f} ms, p99 {e99:.1f} ms. First "
            f"evaluation's transitions: {fired}.",
            "",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--results", type=Path, default=None, help="update this RESULTS.md section")
    args = parser.parse_args()
    spans_bench.AGENTS = [f"agent-{i:02d}" for i in range(N_AGENTS)]
    spans_bench.batch = batch  # build() draws its batches from here
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "topology.duckdb"
        last_end, build_s = spans_bench.build(db, args.spans)
        out = measure(db, last_end, args.runs)
    command = "python bench/topology.py" + (f" --spans {args.spans}" if args.spans != 10_000_000 else "")
    section = report(out, command, build_s)
    print(section)
    if args.results is not None:
        spans_bench.write_results(args.results, section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

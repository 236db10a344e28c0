"""An evaluated span's verdicts under it (SPEC §18): in `reach-otel trace`'s tree and in the MCP
server's compact tree, each evaluation on its own line (name, label, score, explanation), its text
escaped like every other string from spans."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "alerting"))
sys.path.insert(0, str(HERE.parent / "causes"))
from alerting_live import live_collector  # noqa: E402
from cause_helpers import App  # noqa: E402

from reach_collector.cli.assistant import compact_tree  # noqa: E402


def test_the_trees_show_each_evaluation_under_its_span(tmp_path: Path) -> None:
    with live_collector(tmp_path / "t.duckdb", {}, alert_loop=False) as c:
        app = App(c.url, base_ns=time.time_ns() - 10 * 1_000_000_000)
        try:
            root = app.root(0, 900, error=None)
            billing = root.agent("Billing", 10, 800)
            app.flush()
        finally:
            app.close()
        verdict = {
            "trace_id": root.trace_id,
            "span_id": billing.span_id,
            "name": "correctness",
            "label": "incorrect",
            "score": 0,
            "comment": "the refund amount\ndoes not match",
        }
        assert c.post("/api/feedback", verdict).status_code == 202
        out = subprocess.run(
            [sys.executable, "-m", "reach_otel", "trace", root.trace_id, "--url", c.url],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "COLUMNS": "120"},
        )
        trace = c.get(f"/api/traces/{root.trace_id}")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "invoke_agent Billing" in line)
    assert "◇ correctness: incorrect, 0.0" in lines[at + 1], out.stdout
    compact = compact_tree(trace).splitlines()
    at = next(i for i, line in enumerate(compact) if "invoke_agent Billing" in line)
    assert compact[at + 1].strip().startswith("◇ correctness: incorrect, 0.0 — the refund amount")
    assert len(compact) == 2 + trace["span_count"] + 1  # one line for the evaluation, newline escaped

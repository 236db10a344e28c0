"""A one-minute soak (bench/soak.py runs the long one): steady multi-agent traffic with alert
evaluation and retention on; every span is received, none rejected or dropped, no error in the
collector's log, and its memory stays within a band after warm-up (too short a run to judge a
slope: bench/soak.py does that over 10 minutes, with the retention window full)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from soak import run_soak


@pytest.mark.slow
def test_one_minute_soak(tmp_path: Path) -> None:
    report = run_soak(1.0, 150, tmp_path)
    assert report["sent_spans"] > 30_000
    assert report["dropped_by_app"] == 0
    assert report["rejected_spans"] == 0
    assert report["received_spans"] == report["sent_spans"]
    assert report["stored_spans"] == report["sent_spans"]
    assert report["log_errors"] == []
    low, high = report["rss_after_warmup_min_max_mb"]
    assert high - low < 200, report["rss_curve"]
    # DuckDB's share stays under the store's default memory limit (512MB).
    assert max(s["duckdb"] for s in report["rss_curve"]) < 512 * 1e6 / 2**20, report["rss_curve"]

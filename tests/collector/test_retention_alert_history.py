"""Retention prunes the alert history too, but keeps what a restart restores (active episodes)."""

from __future__ import annotations

from pathlib import Path

from reach_collector.alerting.evaluation.store_history import StoreHistory
from reach_collector.store.duckdb_store import DuckDBStore

S = 10**9
DAY = 86400


def _transition(
    fp: str, t: float, from_state: str, to_state: str, active_at: float, fired: float | None
) -> tuple:
    labels = '{"agent": "' + fp + '"}'
    return (int(t * S), "ReachSuccessRateLow", "P0", fp, labels, from_state, to_state, 0.5, "{}",
            int(active_at * S), None if fired is None else int(fired * S), None)  # fmt: skip


def test_old_history_goes_active_episodes_stay(tmp_path: Path) -> None:
    now = 1_800_000_000.0
    old, recent, cutoff = now - 10 * DAY, now - 60, int((now - 7 * DAY) * S)
    store = DuckDBStore(tmp_path / "h.duckdb")
    store.append(
        "alert_transitions",
        [
            # A: an old episode, resolved long ago → pruned.
            _transition("A", old, "inactive", "firing", old, old),
            _transition("A", old + 60, "firing", "resolved", old, old),
            # B: fired long ago and still firing → kept (a restart must pick it up again).
            _transition("B", old, "inactive", "firing", old, old),
            # C: a recent episode → kept.
            _transition("C", recent, "inactive", "pending", recent, None),
        ],
    )
    store.append(
        "alert_acks", [("A", "alice", int(old * S), int(old * S)), ("B", "bob", int(old * S), int(old * S))]
    )
    attempt = ("ReachSuccessRateLow", "alice", "http://127.0.0.1:9/page", 1, True, False, None, None)
    store.append(
        "alert_deliveries",
        [(int(old * S), 1, "firing", "A", *attempt), (int(recent * S), 2, "firing", "C", *attempt)],
    )

    store.delete_older_than(cutoff)

    fps = {r[0] for r in store.query("SELECT DISTINCT fingerprint FROM alert_transitions")}
    assert fps == {"B", "C"}
    assert store.query("SELECT fingerprint, acked_by FROM alert_acks") == [("B", "bob")]
    assert store.query("SELECT fingerprint FROM alert_deliveries") == [("C",)]
    alerts, acks = StoreHistory(store).active()
    assert {a.fingerprint: a.state.value for a in alerts} == {"B": "firing", "C": "pending"}
    assert acks == {("B", old): "bob"}
    store.close()

"""Reads of the store's ``alert_*`` tables (schema.AUX_TABLES) that every store shares: the last
transition of each alert episode, and the episodes still open, which retention keeps however old.

The history is small (retention prunes it), so these fetch the rows plainly and reduce them here:
one definition for every store, with no window functions (SPEC §16).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from reach_collector.store.base import TraceStore

__all__ = ["EPISODE_COLUMNS", "last_transitions", "open_episode_keys"]

# The columns of a last_transitions row, in order.
EPISODE_COLUMNS: Final = (
    "fingerprint, alertname, severity, labels, annotations, to_state, value, "
    "active_at_ns, fired_at_ns, resolved_at_ns, time_ns"
)
# Transitions at the same instant (for: 0 goes inactive → pending → firing at once): later state wins.
_RANK: Final = {"pending": 1, "firing": 2, "resolved": 3}


def last_transitions(store: TraceStore) -> list[tuple[Any, ...]]:
    """The last transition of each episode (one fingerprint, one active_at), newest first."""
    last: dict[tuple[str, Any], tuple[Any, ...]] = {}
    for row in store.query(f"SELECT {EPISODE_COLUMNS} FROM alert_transitions"):
        key = (row[0], row[7])
        best = last.get(key)
        if best is None or _order(row) > _order(best):
            last[key] = row
    return sorted(last.values(), key=lambda r: -int(r[10]))


def open_episode_keys(store: TraceStore) -> tuple[set[tuple[str, Any]], set[tuple[str, Any]]]:
    """What retention keeps of the history however old: the (fingerprint, active_at_ns) of every
    episode still pending or firing — its transitions — and their (fingerprint, fired_at_ns) — its
    acknowledgements (as schema.PRUNE_ALERT_HISTORY keeps them)."""
    open_ = [r for r in last_transitions(store) if r[5] in ("pending", "firing")]
    return {(r[0], r[7]) for r in open_}, {(r[0], r[8]) for r in open_}


def _order(row: Sequence[Any]) -> tuple[int, int]:
    return int(row[10]), _RANK.get(row[5], 0)

"""The settled-minutes cache on its own: how a window splits into a head, whole settled minutes and
the open edge; sums and minimums over minutes (and over blocks of them) against a plain loop; rows
kept one by one for a head; the bound on entries."""

from __future__ import annotations

import random

import numpy as np
import pytest

from reach_collector.alerting.inputs.settled import MINUTE_NS, SettledMinutes, split

S = 1_000_000_000
M = MINUTE_NS


def test_split_a_window_into_head_minutes_and_open_edge() -> None:
    now = 1000 * M + 17 * S + 250  # 17 s and a bit into minute 1000
    # 30 minutes back, settled after 2 minutes: minutes 971..997 settled (997 ends 998·M ≤ now − 120 s)
    sp = split(now - 1800 * S, now, 120 * S)
    assert (sp.first, sp.last, sp.open_from) == (971, 998, 998 * M)
    assert sp.head == (now - 1800 * S, 971 * M)  # the part of minute 970 inside the window
    # A window on a minute boundary has no head; one inside the open edge is read live whole.
    assert split(990 * M, now, 120 * S).head is None
    short = split(now - 90 * S, now, 120 * S)
    assert (short.first, short.last, short.head, short.open_from) == (998, 998, None, now - 90 * S)
    # The retention edge: nothing cached before it; a head reaching past it spans more than a minute.
    old = split(now - 1800 * S, now, 120 * S, oldest_ns=975 * M + 5 * S)
    assert old.first == 977 and old.head == (now - 1800 * S, 977 * M)
    assert split(now - 1800 * S, now, 120 * S, oldest_ns=960 * M).first == 971


def test_totals_are_sums_and_minimums_over_the_minutes() -> None:
    rng = random.Random(3)
    cache = SettledMinutes(3, min_fields=(2,))
    truth: dict[int, dict[str, tuple[int, int, int]]] = {}
    for m in range(0, 300):
        rows = {
            f"k{rng.randrange(12)}": (rng.randrange(50), rng.randrange(9), rng.randrange(10**15))
            for _ in range(5)
        }
        truth[m] = rows
        # Two rows of one key in a minute are combined as the fields say.
        keys = [*rows, *list(rows)[:1]]
        values = [*rows.values(), (1, 1, 10**16)]
        cache.put(m, keys, np.array(values))
        first = next(iter(rows))
        truth[m][first] = (rows[first][0] + 1, rows[first][1] + 1, rows[first][2])
    firsts = [0, 7, 59, 60, 61, 119, 120, 250]
    got = cache.totals(300, firsts)
    for first in firsts:
        expected: dict[str, tuple[int, int, int]] = {}
        for m in range(first, 300):
            for key, (a, b, c) in truth[m].items():
                e = expected.get(key)
                expected[key] = (a, b, c) if e is None else (e[0] + a, e[1] + b, min(e[2], c))
        assert got[first] == expected, first
    # A minute changed inside a block of 60 is seen (the block is combined again).
    cache.put(70, ["k0"], np.array([(1000, 0, 0)]))
    assert (
        cache.totals(130, [60])[60]["k0"][0]
        == sum(truth[m].get("k0", (0, 0, 0))[0] for m in range(60, 130) if m != 70) + 1000
    )
    with pytest.raises(KeyError):
        cache.totals(301, [0])  # minute 300 is not held


def test_missing_runs_and_empty_minutes() -> None:
    cache = SettledMinutes(3)
    for m in (3, 4, 8):
        cache.put(m, [], np.zeros((0, 3)))  # an empty minute is held as such
    assert cache.missing(0, 10) == [(0, 3), (5, 8), (9, 10)]
    assert cache.totals(5, [3]) == {3: {}}


def test_rows_kept_one_by_one_count_after_any_instant() -> None:
    cache = SettledMinutes(3)
    ends = np.array([10 * M + 1, 10 * M + 5 * S, 10 * M + 30 * S, 11 * M])
    keys = [("a", "b"), ("a", "c"), ("a", "b"), ("a", "b")]
    values = np.array([(1, 1, 1), (1, 0, 0), (1, 1, 0), (1, 1, 1)])
    cache.put(10, keys, values, ends=ends)
    assert cache.after(10, 10 * M + 5 * S) == {("a", "b"): (2, 2, 1)}
    assert cache.after(10, 10 * M) == {("a", "b"): (3, 3, 2), ("a", "c"): (1, 0, 0)}
    assert cache.after(11, 0) is None  # not held one by one
    cache.put(11, [], np.zeros((0, 3)))
    cache.put_rows(11, [("x", "y")], np.array([(1, 0, 0)]), np.array([11 * M + 3]))
    assert cache.after(11, 11 * M) == {("x", "y"): (1, 0, 0)}
    with pytest.raises(KeyError):
        cache.put_rows(12, [], np.zeros((0, 3)), np.zeros(0))  # only for a minute held as counts


def test_the_bound_drops_the_oldest_minutes_and_forgets_their_keys() -> None:
    cache = SettledMinutes(1, max_entries=100)
    for m in range(50):
        cache.put(m, [f"user-{m}-{i}" for i in range(10)], np.ones((10, 1)))
        cache.trim()
        assert cache.entries <= 100
    assert cache.missing(0, 50) == [(0, 40)]  # the newest ten minutes stay
    assert cache.totals(50, [40])[40] == {f"user-{m}-{i}": (1,) for m in range(40, 50) for i in range(10)}
    cache.max_entries = 0
    cache.trim()
    assert cache.entries == 0 and cache.missing(0, 50) == [(0, 50)]
    cache.put(60, ["again"], np.ones((1, 1)))
    assert cache.totals(61, [60]) == {60: {"again": (1,)}}


def test_keys_of_dropped_minutes_are_forgotten() -> None:
    cache = SettledMinutes(2, min_fields=(1,), max_entries=10)
    cache.put(0, [f"conversation-{i}" for i in range(25_000)], np.ones((25_000, 2)))
    cache.put(1, ["a", "b", "a"], np.array([(1, 7), (2, 5), (3, 4)]))
    cache.put(2, ["b"], np.array([(4, 9)]))
    cache.trim()  # minute 0 goes, and with it 25 000 keys nothing uses any more
    assert cache.missing(0, 3) == [(0, 1)]
    assert len(cache._keys) == 2
    assert cache.totals(3, [1]) == {1: {"a": (4, 4), "b": (6, 5)}}


def test_put_many_keeps_minutes_as_put_does() -> None:
    rng = random.Random(11)
    one, many = SettledMinutes(3, min_fields=(2,)), SettledMinutes(3, min_fields=(2,))
    rows = [
        (
            rng.randrange(95, 140),
            f"k{rng.randrange(30)}",
            (rng.randrange(9), rng.randrange(9), rng.randrange(10**12)),
        )
        for _ in range(3000)
    ]
    for m in range(100, 130):
        kept = [(k, v) for minute, k, v in rows if minute == m]
        one.put(m, [k for k, _ in kept], np.array([v for _, v in kept]).reshape(-1, 3))
    many.put(100, ["stale"], np.array([(1, 1, 1)]))  # replaced, not added to
    many.put_many(
        100, 130, np.array([m for m, _, _ in rows]), [k for _, k, _ in rows], np.array([v for *_, v in rows])
    )
    assert many.missing(95, 140) == one.missing(95, 140) == [(95, 100), (130, 140)]
    assert many.entries == one.entries
    firsts = [100, 101, 117, 129]
    assert many.totals(130, firsts) == one.totals(130, firsts)
    many.put_many(200, 203, np.zeros(0), [], np.zeros((0, 3)))
    assert many.totals(203, [200]) == {200: {}}

"""The demo's traffic: a normal mix first, then a refund incident, with a progress bar.

Phase one is ordinary work; from ``incident_at`` on, most billing requests are refunds, which the
refund backend mostly rejects — so the billing agent's success rate drops below 50% (P0). Tech
support is slow all along (P1); a ping-pong request now and then runs into the hop limit.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Callable

from reach_collector.demo.support import Request, SupportDesk

NORMAL = {"invoice": 40, "refund": 8, "outage": 15, "chitchat": 20, "pingpong": 4, "bad_invoice": 3}
INCIDENT = {"invoice": 3, "refund": 80, "outage": 15, "chitchat": 10, "pingpong": 4, "bad_invoice": 3}


def pick(mix: dict[str, int], rng: random.Random) -> str:
    kinds = list(mix)
    return rng.choices(kinds, weights=[mix[k] for k in kinds])[0]


def make_request(kind: str, n: int) -> Request:
    if kind == "bad_invoice":  # a failing tool: the invoice does not exist
        return Request("invoice", "where is invoice INV-404?", invoice="INV-404", session=f"S-{n}")
    return Request(kind, f"customer question about {kind} #{n}", invoice=f"INV-{1 + n % 3}", session=f"S-{n}")


async def drive(
    desk: SupportDesk,
    duration_s: float,
    *,
    concurrency: int = 4,
    incident_at: float = 0.25,
    seed: int = 11,
    progress: Callable[[float, Counter[str]], None] | None = None,
) -> Counter[str]:
    """Send requests for ``duration_s`` seconds; returns counts by outcome (``ok``/``error``)."""
    rng = random.Random(seed)
    outcomes: Counter[str] = Counter()
    started = time.monotonic()
    deadline = started + duration_s
    counter = iter(range(1_000_000))

    async def worker() -> None:
        while (now := time.monotonic()) < deadline:
            mix = INCIDENT if now - started >= incident_at * duration_s else NORMAL
            kind = pick(mix, rng)
            try:
                await desk.turn(make_request(kind, next(counter)))
                outcomes["ok"] += 1
            except Exception:  # the failures are the point: they feed the alerts
                outcomes["error"] += 1
            outcomes[kind] += 1
            if progress is not None:
                progress(min(1.0, (time.monotonic() - started) / duration_s), outcomes)
            await asyncio.sleep(rng.uniform(0.02, 0.12))

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return outcomes

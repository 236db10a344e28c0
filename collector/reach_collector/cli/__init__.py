"""The collector's command line: `reach-otel collector` (serve.py) and the query commands, one module
each — `trace`/`traces` (traces.py), `metrics` (metrics.py), `alerts` with `replay`, `ack` and
`deliveries` (alerts.py), `oncall` (oncall.py), `agents` (agents.py), `conversations`
(conversations.py), `why` (why.py), `mcp`
(mcp.py) — over a small stdlib HTTP client (client.py) and rich rendering (render.py). Only
argparse and the stdlib are imported here, so `reach-otel --help` works without the collector extra."""

from __future__ import annotations

import argparse

from reach_collector.cli import (
    agents,
    alerts,
    conversations,
    mcp,
    metrics,
    oncall,
    serve,
    topology,
    traces,
    why,
)

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `collector` and every query command to the `reach-otel` command line."""
    for module in (serve, traces, metrics, alerts, oncall, agents, conversations, topology, why, mcp):
        module.register(sub)

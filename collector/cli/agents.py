"""`reach-otel agents`: the agents a running collector has heard from, by last heartbeat (live, lost
or stopped), from its `/api/agents`."""

from __future__ import annotations

import argparse

from reach_collector.cli.client import QueryError, add_query_arguments, call, fail, print_json

__all__ = ["register", "run_agents"]


def run_agents(args: argparse.Namespace) -> int:
    try:
        body = call(args, "/api/agents")
    except QueryError as exc:
        return fail(str(exc))
    if not print_json(args, body):
        from reach_collector.cli.render import print_table

        rows = [
            [a["agent_id"], a["status"], a.get("last_heartbeat") or "", a.get("service") or ""]
            for a in body["agents"]
        ]
        print_table("Agents", ["agent", "status", "last heartbeat", "service"], rows, "no heartbeats")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `agents` to the `reach-otel` command line."""
    agents = sub.add_parser("agents", help="agents by last heartbeat (live, lost or stopped)")
    add_query_arguments(agents)
    agents.set_defaults(func=run_agents)

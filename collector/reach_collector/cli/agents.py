"""`reach-otel agents`: the agents a running collector has heard from — live, lost or stopped, when
it last heard, and the service they run in — from its `/api/agents`; times in the display zone."""

from __future__ import annotations

import argparse

from reach_collector.cli.client import (
    add_query_arguments,
    call,
    display_zone,
    print_json,
    query_command,
    requested_zone,
)
from reach_collector.cli.formats import when

__all__ = ["NO_HEARTBEATS", "register", "run_agents"]

# Traced spans alone list no agent here: the registry is heartbeats (§4), which a new user may not
# have sent yet.
NO_HEARTBEATS = (
    "no heartbeats yet: an agent is listed once it sends them, with reach_otel.heartbeat(agent_id) "
    "or POST /api/heartbeats (its spans alone do not list it; `reach-otel metrics --by agent` shows "
    "the agents that ran)"
)


@query_command
def run_agents(args: argparse.Namespace) -> int:
    requested_zone(args)
    body = call(args, "/api/agents")
    if not print_json(args, body):
        from reach_collector.cli.render import Col, print_table, zone_heading

        zone = display_zone(args)
        rows = [
            [a["agent_id"], a["status"], when(a.get("last_heartbeat"), zone), a.get("service") or ""]
            for a in body["agents"]
        ]
        columns = [
            Col("agent", floor=12),
            Col("status", whole=True),
            Col("last heartbeat", whole=True),
            Col("service", floor=10),
        ]
        title = f"{len(rows)} agent(s)"
        print_table(zone_heading(title, zone), columns, rows, NO_HEARTBEATS)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `agents` to the `reach-otel` command line."""
    agents = sub.add_parser("agents", help="agents by last heartbeat (live, lost or stopped)")
    add_query_arguments(agents)
    agents.set_defaults(func=run_agents, cli_name="agents")

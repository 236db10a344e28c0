"""Start one agent of the mesh: ``python serve.py --role data --port 8101``.

Traced with no code change to the agents by ``reach-otel run -- python serve.py ...`` and the
variables in ``reach-otel.env`` beside this file; the launcher only registers the agent's heartbeat.
"""

from __future__ import annotations

import argparse
import os

import uvicorn
from mesh_agents import AGENTS, create_app

import reach_otel

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--role", choices=sorted(AGENTS), required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    name = AGENTS[args.role].name
    print(f"{name} listening on http://127.0.0.1:{args.port}", flush=True)
    # Register with the mesh's registry (the collector) and keep renewing: a lost agent is a P2.
    reach_otel.heartbeat(
        name,
        every=float(os.environ.get("MESH_HEARTBEAT_EVERY", "30")),
        endpoint=f"http://127.0.0.1:{args.port}",
        capabilities=[args.role],
    )
    uvicorn.run(create_app(args.role), host="127.0.0.1", port=args.port, log_level="warning")

"""Start one agent of the mesh: ``python serve.py --role data --port 8101``.

Traced with no code change by ``reach-otel run -- python serve.py ...`` and the variables in
``reach-otel.env`` beside this file.
"""

from __future__ import annotations

import argparse

import uvicorn
from mesh_agents import AGENTS, create_app

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--role", choices=sorted(AGENTS), required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    print(f"{AGENTS[args.role].name} listening on http://127.0.0.1:{args.port}", flush=True)
    uvicorn.run(create_app(args.role), host="127.0.0.1", port=args.port, log_level="warning")

"""Start one agent of the desk as an A2A server: ``python serve.py --agent billing --port 8202``.

Triage needs ``BILLING_URL`` and Billing ``TRIAGE_URL`` (each other's base URL); both call the LLM at
``OPENAI_BASE_URL``. Under ``reach-otel run -- python serve.py ...`` every A2A request, handoff, agent
run and LLM call becomes a span, with no change to this code.
"""

from __future__ import annotations

import argparse

import uvicorn
from desk_agents import AGENTS, create_app

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", choices=sorted(AGENTS), required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    print(f"{AGENTS[args.agent].name} listening on http://127.0.0.1:{args.port}", flush=True)
    uvicorn.run(create_app(args.agent, args.port), host="127.0.0.1", port=args.port, log_level="warning")

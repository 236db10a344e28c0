"""A tiny webhook receiver that prints the pages reach-otel sends (Alertmanager webhook v4 JSON).

    python examples/oncall/receiver.py --port 9095

Each user's webhook in reach.yaml is http://127.0.0.1:9095/<user>; the P2 deregistration hook
posts to /registry/deregister.
"""

from __future__ import annotations

import argparse
import time

from reach_collector.demo.pager import Page, Pager


def show(page: Page) -> None:
    if page.recipient.startswith("registry"):
        print(f"registry: deregister {page.body.get('agent_id')}", flush=True)
        return
    for line in page.summary:
        print(f"PAGE {line}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=9095)
    args = parser.parse_args()
    with Pager(port=args.port, on_page=show) as pager:
        print(f"receiving pages on {pager.url}/<user>", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()

"""`python -m reach_collector` — the same as `reach-otel collector`."""

from __future__ import annotations

import argparse
import sys

from reach_collector.cli.serve import add_serve_arguments, run_serve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reach_collector", description="Run the collector.")
    add_serve_arguments(parser)
    return run_serve(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())

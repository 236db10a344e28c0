"""The `reach-otel` command line: a thin argparse front over the library and the collector.

Each command group lives with the code it drives; this module only wires them together, so
`reach-otel --help` works even where the collector's optional dependencies are not installed.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import sys
from collections.abc import Callable, Sequence

from reach_otel import __version__
from reach_otel.run import register as run_register

Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]


def _register_demo(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = sub.add_parser("demo", help="run the end-to-end demo (collector, agents, alerts)")
    demo.add_argument("--db", default=None, help="DuckDB file for the demo's collector")
    demo.add_argument("--port", type=int, default=None, help="collector port")
    demo.add_argument("--duration", type=float, default=None, help="seconds of traffic")
    demo.add_argument("--serve", action="store_true", help="keep the collector running afterwards")
    demo.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    try:
        from reach_collector.demo.run import run_demo
    except ImportError as exc:
        print(f"reach-otel demo needs the collector and openai extras: pip install 'reach-otel[all]' ({exc})")
        return 2
    return run_demo(args)


_COMMAND_GROUPS = (
    "reach_collector.cli",  # collector, trace, traces, metrics, alerts, oncall, agents
    "reach_otel.dashboards_cli",  # dashboards import / export
)


def _optional_registrations() -> list[Register]:
    """Command groups owned by other modules, added when they import cleanly."""
    found: list[Register] = []
    for module_name in _COMMAND_GROUPS:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        found.append(module.register)
    return found


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reach-otel",
        description="Tracing, metrics and alerting for multi-agent LLM systems.",
    )
    parser.add_argument("--version", action="version", version=f"reach-otel {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _register_demo(sub)
    run_register(sub)
    for register in _optional_registrations():
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:  # the reader went away (`| head`): what it wanted, it read
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's own flush at exit is quiet too
        return 0


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:  # said by the subcommand that was given them, with its usage and the near option
        _subcommand_parser(parser, args).error(_unrecognized(_subcommand_parser(parser, args), extras))
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _subcommand_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the deepest subcommand ``args`` chose (``alerts replay`` → replay's)."""
    current = parser
    while True:
        choices = next(
            (a.choices for a in current._actions if isinstance(a, argparse._SubParsersAction)), None
        )
        chosen = getattr(args, _subcommand_dest(current) or "", None)
        if not isinstance(choices, dict) or chosen not in choices:
            return current
        current = choices[chosen]


def _subcommand_dest(parser: argparse.ArgumentParser) -> str | None:
    return next((a.dest for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def _unrecognized(parser: argparse.ArgumentParser, extras: Sequence[str]) -> str:
    """``unrecognized arguments: --sinse 15m (did you mean --since?)``."""
    options = [o for o in parser._option_string_actions if o.startswith("--")]
    hints = []
    for extra in extras:
        if extra.startswith("--"):
            close = difflib.get_close_matches(extra.split("=", 1)[0], options, n=1)
            hints += [f"did you mean {close[0]}?"] if close else []
    tail = f" ({'; '.join(dict.fromkeys(hints))})" if hints else ""
    return f"unrecognized arguments: {' '.join(extras)}{tail}"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

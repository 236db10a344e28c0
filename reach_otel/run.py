"""``reach-otel run -- COMMAND``: run any Python program with reach_otel applied, unmodified.

The program's interpreter imports a bootstrap ``sitecustomize`` (put first on ``PYTHONPATH``)
that calls ``init()`` and every available instrumentor, and prints one line saying what it
applied; ``OTEL_*`` variables and ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS`` apply as usual.
The program's own Python children inherit the environment, so they are instrumented too; a
``reach-otel run`` among them starts its program afresh (its own service name and start-up line).
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import sys
from pathlib import Path

from reach_otel.auto import ANNOUNCE_ENV
from reach_otel.config import is_http_url

BOOTSTRAP_DIR = Path(__file__).with_name("_bootstrap")
_DERIVED_ENV = "_REACH_OTEL_RUN_SERVICE"


def derived_service_name(command: list[str]) -> str:
    """``app`` for ``python app.py``, ``pkg.mod`` for ``python -m pkg.mod``, else the program's name."""
    for word, following in itertools.pairwise([*command[1:], ""]):
        if word == "-m" and following:
            return following
        if word.endswith(".py"):  # the script: what follows are its own arguments
            return Path(word).stem
    return Path(command[0]).name


def child_env(
    args: argparse.Namespace, command: list[str], base: dict[str, str] | None = None
) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    inherited = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(BOOTSTRAP_DIR)]
    env["PYTHONPATH"] = os.pathsep.join([str(BOOTSTRAP_DIR), *inherited])
    env["REACH_OTEL_AUTO"] = "1"
    env[ANNOUNCE_ENV] = "1"
    if args.service_name:
        env["OTEL_SERVICE_NAME"] = args.service_name
    elif "OTEL_SERVICE_NAME" not in env or env["OTEL_SERVICE_NAME"] == env.get(_DERIVED_ENV):
        # A name an outer `reach-otel run` derived for its own program is not this program's name.
        env["OTEL_SERVICE_NAME"] = env[_DERIVED_ENV] = derived_service_name(command)
    if args.endpoint:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = args.endpoint
    if args.capture_content:
        env["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
    return env


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = sub.add_parser(
        "run",
        help="run a Python program with reach_otel applied (no code changes)",
        description="Example: reach-otel run -- python app.py",
    )
    run.add_argument("--service-name", help="service.name (default: OTEL_SERVICE_NAME or the script name)")
    run.add_argument("--endpoint", help="OTLP/HTTP base URL (default: http://127.0.0.1:4318)")
    run.add_argument("--capture-content", action="store_true", help="record prompts, completions, tool I/O")
    run.add_argument("command", nargs=argparse.REMAINDER, help="the program and its arguments, after --")
    run.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else list(args.command)
    if not command:
        print(
            "reach-otel run: give the program to run, e.g. reach-otel run -- python app.py", file=sys.stderr
        )
        return 2
    if args.endpoint and not is_http_url(args.endpoint):
        scheme, sep, rest = args.endpoint.strip().rpartition("://")
        shown = f"{scheme}{sep}{rest.rsplit('@', 1)[-1]}"[:200]  # never echo credentials written into it
        guess = f"http://{shown}"
        hint = f"; did you mean {guess}?" if not sep and is_http_url(guess) else ""
        print(
            f"reach-otel run: --endpoint {shown!r} is not an http:// or https:// URL{hint}", file=sys.stderr
        )
        return 2
    executable = shutil.which(command[0])
    if executable is None:
        print(f"reach-otel run: command not found: {command[0]}", file=sys.stderr)
        return 127
    env = child_env(args, command)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(executable, command, env)
    return 0  # not reached

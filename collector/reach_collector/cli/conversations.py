"""`reach-otel conversations`: a running collector's conversations of a window (turns, agents,
handoffs, tokens, cost, errors, evaluations) from `/api/conversations`, or with an id, that
conversation's traces in start order; times in the display zone."""

from __future__ import annotations

import argparse
from typing import Any
from urllib.parse import quote

from reach_collector.cli.client import (
    UsageError,
    add_query_arguments,
    call,
    display_zone,
    limit_arg,
    print_json,
    query_command,
    requested_zone,
)
from reach_collector.cli.formats import usd, when

__all__ = ["NO_CONVERSATIONS", "register", "run_conversations"]

NO_CONVERSATIONS = (
    "no conversations in this window: a trace joins one when its spans carry gen_ai.conversation.id "
    "(reach_otel.session(...) sets it on every span of a request)"
)
_MAX_ID = 256


def _row(c: dict[str, Any], zone: Any) -> list[Any]:
    from reach_collector.cli.render import stacked

    return [
        stacked(c["conversation_id"], when(c.get("last"), zone)),
        str(c["traces"]),
        ", ".join(c["agents"]),
        str(c["handoffs"]),
        f"{c['input_tokens']}/{c['output_tokens']}",  # in/out
        usd(c.get("cost_usd")),
        str(c["errors"]),
        str(c["evaluations"]),
    ]


@query_command
def run_conversations(args: argparse.Namespace) -> int:
    requested_zone(args)
    if args.conversation_id is not None:
        if not args.conversation_id.strip() or len(args.conversation_id) > _MAX_ID:
            raise UsageError(f"a conversation id has 1 to {_MAX_ID} characters")
        params = [("window", args.window)] if args.window else None
        body = call(args, "/api/conversations/" + quote(args.conversation_id, safe=""), params=params)
        if not print_json(args, body):
            from reach_collector.cli.render import console, print_traces

            console().print(f"conversation {body['conversation_id']}: {body['trace_count']} trace(s)")
            print_traces(body["traces"], display_zone(args))
        return 0
    params = [("window", args.window or "1d"), ("limit", str(args.limit))]
    body = call(args, "/api/conversations", params=params)
    if not print_json(args, body):
        from reach_collector.cli.render import Col, print_table, zone_heading

        zone = display_zone(args)
        # The id folds over as many lines as it needs, its last activity whole on the line under
        # it (a time is 25 columns); at 80 columns only the cost gives way.
        columns = [
            Col("conversation / last", floor=25),
            Col("turns", whole=True, justify="right"),
            Col("agents", floor=8),
            Col("handoffs", whole=True, justify="right", drop=2),
            Col("tokens", whole=True, justify="right", drop=1),
            Col("cost", whole=True, justify="right", drop=3),
            Col("errors", whole=True, justify="right"),
            Col("evals", whole=True, justify="right"),
        ]
        rows = [_row(c, zone) for c in body["conversations"]]
        title = f"{len(rows)} conversation(s) over the last {args.window or '1d'}"
        print_table(zone_heading(title, zone, body.get("until")), columns, rows, NO_CONVERSATIONS)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `conversations` to the `reach-otel` command line."""
    parser = sub.add_parser(
        "conversations", help="conversations by last activity, or one conversation's traces"
    )
    parser.add_argument("conversation_id", metavar="CONVERSATION_ID", nargs="?", help="show its traces")
    parser.add_argument("--window", help="how far back, like 1h or 7d (default 1d for the list)")
    parser.add_argument("--limit", type=limit_arg, default=50, help="at most this many (1 to 1000)")
    add_query_arguments(parser)
    parser.set_defaults(func=run_conversations, cli_name="conversations")

"""What the fake LLM answers: request messages → a deterministic :class:`Reply`.

Pure functions, no HTTP. The last user message's text drives the reply through directives:
``[error:429]`` (an error status), ``[tool:NAME]`` (request a tool call; several are requested one
per model call, in order, as tool results come back), ``[arg:KEY=VALUE]`` (an argument of the
``[tool:NAME]`` before it, the value percent-encoded, e.g. ``[arg:coworker=Senior%20Researcher]``;
a tool call without any gets ``{"query": <text>}``), ``[slow:MS]`` (sleep first) and
``[chunks:N]`` (stream N content chunks). Otherwise the reply is ``"echo: <text>"`` — the user's
text without directives, or, once every requested tool has answered, the last tool result.
Token counts are whitespace-separated words: input over every message (system included),
output over the reply text (or the tool call's JSON arguments).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

_DIRECTIVE = re.compile(r"\[(error|tool|slow|chunks|arg):([^\]\s]+)\]")
DEFAULT_MODEL = "fake-model"

# Roles after normalisation: every API's messages become (role, text) items.
SYSTEM, USER, ASSISTANT, TOOL = "system", "user", "assistant", "tool"


@dataclass(frozen=True)
class Reply:
    """One model answer: a text, a tool call, or an error status."""

    text: str = ""
    tool_name: str | None = None
    tool_arguments: str = ""
    error_status: int | None = None
    slow_ms: int = 0
    chunks: int | None = None
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def is_tool_call(self) -> bool:
        return self.tool_name is not None

    def text_chunks(self) -> list[str]:
        """The reply text as stream deltas: one per word, or ``chunks`` even pieces when asked."""
        text = self.text
        if self.chunks is None:
            return re.findall(r"\S+\s*", text) or [text]
        n = max(1, min(self.chunks, len(text) or 1))
        size, extra = divmod(len(text), n)
        pieces, start = [], 0
        for i in range(n):
            end = start + size + (1 if i < extra else 0)
            pieces.append(text[start:end])
            start = end
        return pieces

    def argument_chunks(self) -> list[str]:
        """The tool call's JSON arguments split in two deltas, as real streams split them."""
        half = len(self.tool_arguments) // 2
        return [p for p in (self.tool_arguments[:half], self.tool_arguments[half:]) if p]


def words(text: str) -> int:
    return len(text.split())


def _text_of(content: Any) -> str:
    """Text of a content value: a string, or a list of parts/blocks with ``text``/``content``."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        for key in ("text", "content", "output", "input"):
            if key in content:
                value = content[key]
                return value if isinstance(value, str) else _text_of(value)
        return ""
    if isinstance(content, Iterable):
        return " ".join(t for t in (_text_of(part) for part in content) if t)
    return str(content)


def chat_items(body: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(role, text) items of an OpenAI chat-completions request."""
    for message in body.get("messages") or ():
        role = message.get("role")
        if role in ("system", "developer"):
            yield SYSTEM, _text_of(message.get("content"))
        elif role in ("tool", "function"):
            yield TOOL, _text_of(message.get("content"))
        elif role == "assistant":
            texts = [_text_of(message.get("content"))]
            texts += [
                _text_of(c.get("function", {}).get("arguments")) for c in message.get("tool_calls") or ()
            ]
            yield ASSISTANT, " ".join(t for t in texts if t)
        else:
            yield USER, _text_of(message.get("content"))


def responses_items(body: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(role, text) items of an OpenAI responses request (``instructions`` + ``input``)."""
    if body.get("instructions"):
        yield SYSTEM, _text_of(body["instructions"])
    given = body.get("input")
    if isinstance(given, str):
        yield USER, given
        return
    for item in given or ():
        kind = item.get("type")
        if kind == "function_call":
            yield ASSISTANT, _text_of(item.get("arguments"))
        elif kind == "function_call_output":
            yield TOOL, _text_of(item.get("output"))
        elif item.get("role") in ("system", "developer"):
            yield SYSTEM, _text_of(item.get("content"))
        elif item.get("role") == "assistant":
            yield ASSISTANT, _text_of(item.get("content"))
        elif item.get("role") is not None:
            yield USER, _text_of(item.get("content"))


def anthropic_items(body: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(role, text) items of an Anthropic messages request; a ``tool_result`` block is a tool item."""
    if body.get("system"):
        yield SYSTEM, _text_of(body["system"])
    for message in body.get("messages") or ():
        role = ASSISTANT if message.get("role") == "assistant" else USER
        content = message.get("content")
        if isinstance(content, str):
            yield role, content
            continue
        for block in content or ():
            kind = block.get("type")
            if kind == "tool_result":
                yield TOOL, _text_of(block.get("content"))
            elif kind == "tool_use":
                yield ASSISTANT, json.dumps(block.get("input"))
            else:
                yield role, _text_of(block)


def strip_directives(text: str) -> str:
    return " ".join(_DIRECTIVE.sub(" ", text).split())


def plan_reply(items: Iterable[tuple[str, str]]) -> Reply:
    """Decide the answer to a conversation of normalised (role, text) items."""
    items = list(items)
    input_tokens = sum(words(text) for _, text in items)
    last_user = max((i for i, (role, _) in enumerate(items) if role == USER), default=-1)
    user_text = items[last_user][1] if last_user >= 0 else ""
    answered = sum(1 for role, _ in items[last_user + 1 :] if role == TOOL)
    error_status, slow_ms, chunks, tools = None, 0, None, []
    arguments: dict[int, dict[str, str]] = {}  # tool index → its [arg:...] directives
    for kind, value in _DIRECTIVE.findall(user_text):
        if kind == "error" and value.isdigit():
            error_status = int(value)
        elif kind == "slow" and value.isdigit():
            slow_ms = int(value)
        elif kind == "chunks" and value.isdigit():
            chunks = int(value)
        elif kind == "tool":
            tools.append(value)
        elif kind == "arg" and tools and "=" in value:
            key, _, raw = value.partition("=")
            arguments.setdefault(len(tools) - 1, {})[unquote(key)] = unquote(raw)
    clean = strip_directives(user_text)
    common: dict[str, Any] = {"slow_ms": slow_ms, "chunks": chunks, "input_tokens": input_tokens}
    if error_status is not None:
        return Reply(error_status=error_status, **common)
    if answered < len(tools):
        args = json.dumps(arguments.get(answered) or {"query": clean})
        return Reply(tool_name=tools[answered], tool_arguments=args, output_tokens=words(args), **common)
    text = "echo: " + (items[-1][1] if answered else clean)
    return Reply(text=text, output_tokens=words(text), **common)

"""Pure extractors for CrewAI: which tool call is a delegation, whom to, and what an LLM event says.

CrewAI delegates through two tools it gives an agent with ``allow_delegation=True`` (and the manager
of a hierarchical crew): *Delegate work to coworker* (the coworker does the work: a delegate handoff)
and *Ask question to coworker* (it answers a question: a consult). Their events name the tool as
shown to the model, either as written or in its function-calling form (``delegate_work_to_coworker``).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from reach_otel import semconv as sc
from reach_otel.errors import error_type

DELEGATE, CONSULT = "delegate", "consult"

#: A delegation tool's normalised name (or its class) → the handoff mode it means.
_DELEGATION_TOOLS: dict[str, str] = {
    "delegate_work_to_coworker": DELEGATE,
    "delegateworktool": DELEGATE,
    "ask_question_to_coworker": CONSULT,
    "askquestiontool": CONSULT,
}
_NON_WORD = re.compile(r"[^0-9a-z]+")


class CrewAIError(Exception):
    """A failure CrewAI reported by message only (its events carry text, not the exception)."""


def _normalised(name: Any) -> str:
    return _NON_WORD.sub("_", name.casefold()).strip("_") if isinstance(name, str) else ""


def delegation_mode(tool_name: Any, tool_class: Any = None) -> str | None:
    """``delegate`` or ``consult`` for CrewAI's delegation tools, ``None`` for any other tool."""
    for name in (tool_name, tool_class):
        mode = _DELEGATION_TOOLS.get(_normalised(name))
        if mode is not None:
            return mode
    return None


def tool_arguments(raw: Any) -> Any:
    """A tool call's arguments as data: CrewAI gives a dict, or the model's JSON text."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def _role_key(name: str) -> str:
    # CrewAI's own matching of a coworker: whitespace collapsed, quotes dropped, case folded.
    return " ".join(name.split()).replace('"', "").casefold()


def coworker(arguments: Any, roles: Iterable[str] = ()) -> str | None:
    """The agent a delegation tool call addresses, named as that agent is when a role matches."""
    if not isinstance(arguments, Mapping):
        return None
    named = arguments.get("coworker") or arguments.get("co_worker")
    if not isinstance(named, str) or not named.strip():
        return None
    if named.startswith("[") and named.endswith("]"):  # CrewAI takes the first of a list
        named = named[1:-1].split(",")[0]
    key = _role_key(named)
    for role in roles:
        if isinstance(role, str) and _role_key(role) == key:
            return " ".join(role.split())
    return " ".join(named.split()).replace('"', "")


def agent_name(agent: Any) -> str:
    """An agent's name in spans: its role, whitespace collapsed (CrewAI agents have no other name)."""
    role = getattr(agent, "role", None)
    text = " ".join(role.split()) if isinstance(role, str) else ""
    return text or type(agent).__name__


def kickoff_of(ctx: Any) -> tuple[Any, str] | None:
    """What an execution hook's context starts or ends, and its workflow name: the crew (named by
    its ``name``, else "crew"), or — a flow's own kickoff, with no crew — the flow (its ``name``,
    else its class name)."""
    crew = getattr(ctx, "crew", None)
    if crew is not None:
        name = getattr(crew, "name", None)
        return crew, name if isinstance(name, str) and name else "crew"
    flow = getattr(ctx, "flow", None)
    if flow is not None:
        name = getattr(flow, "name", None)
        return flow, name if isinstance(name, str) and name else type(flow).__name__
    return None


def crew_roles(crew: Any) -> list[str]:
    """The roles of a crew's agents and of its manager, if it has one: the possible coworkers."""
    agents = [*(getattr(crew, "agents", None) or ()), getattr(crew, "manager_agent", None)]
    return [role for a in agents if isinstance(role := getattr(a, "role", None), str)]


def usage_tokens(usage: Any) -> tuple[int | None, int | None]:
    """Input and output tokens from CrewAI's usage dict (OpenAI-style or input/output names)."""
    if not isinstance(usage, Mapping):
        return None, None

    def first(*keys: str) -> int | None:
        for key in keys:
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None

    return first("prompt_tokens", "input_tokens"), first("completion_tokens", "output_tokens")


def server_of(llm: Any) -> tuple[str | None, int | None]:
    """``server.address`` and ``server.port`` of the endpoint a CrewAI LLM object calls, if it says."""
    for attr in ("base_url", "api_base"):
        url = getattr(llm, attr, None)
        if isinstance(url, str) and url:
            parts = urlsplit(url)
            try:
                port = parts.port or (443 if parts.scheme == "https" else 80)
            except ValueError:
                port = None
            return parts.hostname, port
    return None, None


def provider_of(llm: Any) -> str:
    """``gen_ai.provider.name`` of a CrewAI LLM object (its ``provider`` field), else ``crewai``."""
    provider = getattr(llm, "provider", None)
    return provider if isinstance(provider, str) and provider else "crewai"


def request_attributes(event: Any) -> Iterator[tuple[str, Any]]:
    """The sampling parameters an ``LLMCallStartedEvent`` forwards."""
    for field, key in (
        ("temperature", sc.GEN_AI_REQUEST_TEMPERATURE),
        ("top_p", sc.GEN_AI_REQUEST_TOP_P),
        ("max_tokens", sc.GEN_AI_REQUEST_MAX_TOKENS),
    ):
        value = getattr(event, field, None)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            yield key, value


def requested_tools(response: Any) -> list[str]:
    """Names of the tools a model response asks for (CrewAI passes the SDK's tool-call list on)."""
    if not isinstance(response, (list, tuple)):
        return []
    names = []
    for call in response:
        function = call.get("function") if isinstance(call, Mapping) else getattr(call, "function", None)
        name = function.get("name") if isinstance(function, Mapping) else getattr(function, "name", None)
        if isinstance(name, str):
            names.append(name)
    return names


def response_attributes(event: Any) -> Iterator[tuple[str, Any]]:
    """Response id, finish reason and requested tools of an ``LLMCallCompletedEvent``."""
    response_id = getattr(event, "response_id", None)
    if isinstance(response_id, str) and response_id:
        yield sc.GEN_AI_RESPONSE_ID, response_id
    reason = getattr(event, "finish_reason", None)
    if isinstance(reason, str) and reason:
        yield sc.GEN_AI_RESPONSE_FINISH_REASONS, [reason]
    tools = requested_tools(getattr(event, "response", None))
    if tools:
        yield sc.REACH_LLM_TOOL_CALLS_REQUESTED, tools


def reported_error(message: Any) -> tuple[BaseException, str]:
    """The exception behind an error event and its ``error.type``.

    CrewAI emits its error events from the ``except`` block that caught the failure, so the
    exception being handled is the one reported; without one, the event's message stands for it.
    """
    exc = sys.exc_info()[1]
    if isinstance(exc, Exception):
        return exc, error_type(exc)
    text = str(message) if message else "error"
    return CrewAIError(text[:1024]), error_type(CrewAIError(text))


def failure_type(failure: Any) -> str | None:
    """``error.type`` of a tool that returned a ``ToolFailure``: its code, else the reason."""
    if failure is None:
        return None
    code = getattr(failure, "code", None)
    if isinstance(code, str) and code:
        return code
    reason = getattr(failure, "reason", None)
    value = getattr(reason, "value", reason)
    return str(value) if value else "tool_failure"

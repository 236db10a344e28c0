"""Pure readers of what LangChain's callbacks report about a LangGraph run: which runs are graph
roots and nodes, the agent override, handoff targets (tools, ``Command``s, hand-back messages),
and the model, usage and response of a chat-model call. No spans here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from reach_otel import semconv as sc

#: Node metadata that overrides the agent rule: True (an agent named after the node), a name (an
#: agent of that name) or False (never an agent), e.g. ``add_node("x", fn, metadata={AGENT_KEY: True})``.
AGENT_KEY = "reach_otel.agent"
#: The ``ls_integration`` values of graph runs: LangGraph's own and ``langchain.agents.create_agent``.
GRAPH_INTEGRATIONS = frozenset({"langgraph", "langchain_create_agent"})
#: The agent name ``create_agent`` puts in its runs' metadata.
LC_AGENT_NAME = "lc_agent_name"
#: Where langgraph-supervisor and langgraph-swarm handoff tools name their target agent.
HANDOFF_DESTINATION = "__handoff_destination"
_HANDOFF_BACK = "__is_handoff_back"
_TRANSFER = re.compile(r"^transfer_(?:back_)?to_(.+)$")
_PARENT = "__parent__"  # langgraph.types.Command.PARENT
_RECURSION = re.compile(r"Recursion limit of (\d+)")
#: LangChain's ``ls_provider`` → ``gen_ai.provider.name`` where the two differ.
_PROVIDERS = {
    "azure": "azure.ai.openai",
    "bedrock": "aws.bedrock",
    "amazon_bedrock": "aws.bedrock",
    "google_genai": "gcp.gen_ai",
    "google_vertexai": "gcp.vertex_ai",
    "mistralai": "mistral_ai",
}


def is_graph_root(metadata: Mapping[str, Any] | None) -> bool:
    """A chain run with no tracked parent is a graph invocation (the workflow) when LangGraph says so."""
    return metadata is not None and metadata.get("ls_integration") in GRAPH_INTEGRATIONS


def node_step(name: str | None, tags: Sequence[str] | None, metadata: Mapping[str, Any] | None) -> int | None:
    """The superstep of a run that is one node's task in a graph (tagged ``graph:step:N``), else None."""
    if not metadata or not tags or name is None or metadata.get("langgraph_node") != name:
        return None
    step = metadata.get("langgraph_step")
    if isinstance(step, int) and f"graph:step:{step}" in tags:
        return step
    return None


def node_attributes(node: str, step: int) -> dict[str, Any]:
    """Where an agent node's span ran: the graph node and its superstep."""
    return {sc.LANGGRAPH_NODE: node, sc.LANGGRAPH_STEP: step}


def agent_override(metadata: Mapping[str, Any] | None) -> bool | str | None:
    """The node's explicit choice: a name or True (an agent), False (not one), None (the rule decides)."""
    value = metadata.get(AGENT_KEY) if metadata else None
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, bool):
        return value
    return None


def agent_name(metadata: Mapping[str, Any] | None) -> str | None:
    """The agent name ``create_agent`` gives its runs (``lc_agent_name``), if any."""
    name = metadata.get(LC_AGENT_NAME) if metadata else None
    return name if isinstance(name, str) and name else None


def handoff_destination(tool: str | None, metadata: Mapping[str, Any] | None) -> str | None:
    """The agent a handoff tool transfers to: its ``__handoff_destination``, else ``transfer_to_X``."""
    dest = metadata.get(HANDOFF_DESTINATION) if metadata else None
    if isinstance(dest, str) and dest:
        return dest
    match = _TRANSFER.match(tool or "")
    return match.group(1) if match else None


def tool_name(serialized: Mapping[str, Any] | None, kwargs: Mapping[str, Any]) -> str:
    name = kwargs.get("name") or (serialized or {}).get("name")
    return name if isinstance(name, str) and name else "tool"


# -- Commands and hand-backs ------------------------------------------------------------------------
def _goto_names(goto: Any) -> Iterator[str]:
    items = goto if isinstance(goto, (list, tuple)) else (goto,)
    for item in items:
        if isinstance(item, str):
            yield item
        else:
            node = getattr(item, "node", None)  # a Send
            if isinstance(node, str):
                yield node


def command_targets(value: Any) -> tuple[list[str], bool]:
    """The nodes a ``Command`` (or a list of them, or a ParentCommand error) routes to, and whether
    it is meant for the parent graph. Anything else: no targets."""
    if isinstance(value, BaseException):
        value = value.args[0] if value.args else None
    commands = value if isinstance(value, (list, tuple)) else (value,)
    targets: list[str] = []
    parent = False
    for command in commands:
        if type(command).__name__ != "Command":
            continue
        targets.extend(t for t in _goto_names(getattr(command, "goto", ())) if not t.startswith("__"))
        parent = parent or getattr(command, "graph", None) == _PARENT
    return targets, parent


def handed_back_to(output: Any) -> tuple[str, str] | None:
    """(target, tool name) when a worker's output ends with langgraph-supervisor's hand-back messages."""
    messages = output.get("messages") if isinstance(output, Mapping) else None
    if not isinstance(messages, list):
        return None
    for message in messages[-2:]:
        if not getattr(message, "response_metadata", {}).get(_HANDOFF_BACK):
            continue
        for call in getattr(message, "tool_calls", None) or ():
            name = call.get("name") if isinstance(call, Mapping) else None
            target = handoff_destination(name, None)
            if target and name:
                return target, name
    return None


def recursion_limit(exc: BaseException) -> int | None:
    """The limit a ``GraphRecursionError`` names in its message."""
    match = _RECURSION.search(str(exc))
    return int(match.group(1)) if match else None


# -- chat models ------------------------------------------------------------------------------------
def chat_request(
    serialized: Mapping[str, Any] | None, metadata: Mapping[str, Any] | None, params: Mapping[str, Any] | None
) -> tuple[str | None, str, bool]:
    """(model, provider, streamed) of a chat-model run."""
    params = params or {}
    metadata = metadata or {}
    model = params.get("model") or params.get("model_name") or metadata.get("ls_model_name")
    raw = metadata.get("ls_provider")
    if not isinstance(raw, str) or not raw:
        ids = (serialized or {}).get("id")
        raw = ids[-1] if isinstance(ids, list) and ids and isinstance(ids[-1], str) else "langchain"
    provider = _PROVIDERS.get(raw, raw)
    return (model if isinstance(model, str) else None), provider, bool(params.get("stream"))


def request_attributes(params: Mapping[str, Any] | None) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    for name, key in (
        ("max_tokens", sc.GEN_AI_REQUEST_MAX_TOKENS),
        ("max_completion_tokens", sc.GEN_AI_REQUEST_MAX_TOKENS),
        ("temperature", sc.GEN_AI_REQUEST_TEMPERATURE),
        ("top_p", sc.GEN_AI_REQUEST_TOP_P),
    ):
        value = (params or {}).get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            attrs[key] = value
    return attrs


def _first_generation(result: Any) -> Any:
    generations = getattr(result, "generations", None) or ()
    for group in generations:
        for generation in group or ():
            return generation
    return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def chat_usage(result: Any) -> tuple[int | None, int | None]:
    """Input and output tokens of an ``LLMResult``: the message's ``usage_metadata``, else ``llm_output``."""
    message = getattr(_first_generation(result), "message", None)
    usage = getattr(message, "usage_metadata", None)
    if isinstance(usage, Mapping):
        return _int(usage.get("input_tokens")), _int(usage.get("output_tokens"))
    token_usage = (getattr(result, "llm_output", None) or {}).get("token_usage")
    if isinstance(token_usage, Mapping):
        return _int(token_usage.get("prompt_tokens")), _int(token_usage.get("completion_tokens"))
    return None, None


def chat_response(result: Any) -> dict[str, Any]:
    """Response model, id, finish reasons and requested tools of an ``LLMResult``."""
    generation = _first_generation(result)
    message = getattr(generation, "message", None)
    meta = getattr(message, "response_metadata", None) or {}
    info = getattr(generation, "generation_info", None) or {}
    llm_output = getattr(result, "llm_output", None) or {}
    attrs: dict[str, Any] = {}
    model = meta.get("model_name") or llm_output.get("model_name")
    if isinstance(model, str) and model:
        attrs[sc.GEN_AI_RESPONSE_MODEL] = model
    response_id = meta.get("id") or llm_output.get("id")
    if isinstance(response_id, str) and response_id:
        attrs[sc.GEN_AI_RESPONSE_ID] = response_id
    reason = meta.get("finish_reason") or info.get("finish_reason") or meta.get("stop_reason")
    if isinstance(reason, str) and reason:
        attrs[sc.GEN_AI_RESPONSE_FINISH_REASONS] = [reason]
    tools = [c.get("name") for c in getattr(message, "tool_calls", None) or () if isinstance(c, Mapping)]
    tools = [t for t in tools if isinstance(t, str)]
    if tools:
        attrs[sc.REACH_LLM_TOOL_CALLS_REQUESTED] = tools
    return attrs


def chat_text(result: Any) -> str | None:
    text = getattr(_first_generation(result), "text", None)
    return text if isinstance(text, str) else None


def messages_of(batches: Any) -> list[dict[str, Any]]:
    """A chat run's input (a list of message batches) as ``{"role", "content"}`` dicts."""
    out: list[dict[str, Any]] = []
    for batch in batches or ():
        for message in batch or ():
            role = getattr(message, "type", None)
            role = {"human": "user", "ai": "assistant"}.get(role, role) if isinstance(role, str) else "user"
            out.append({"role": role, "content": getattr(message, "content", None)})
    return out


def tool_result(output: Any) -> Any:
    """What a tool returned, as the model sees it: a ToolMessage's content, else the value."""
    content = getattr(output, "content", None)
    return content if content is not None and type(output).__name__ == "ToolMessage" else output

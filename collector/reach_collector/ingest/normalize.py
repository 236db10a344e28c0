"""Promote the attributes metrics and search need into flat columns, whatever instrumented the span.

Our own spans (GenAI semconv + ``reach.*``), OpenLLMetry (``traceloop.*``, ``gen_ai.system``),
OpenInference (``openinference.span.kind``, ``llm.*``) and the OpenAI Agents SDK mapping
(``gen_ai.handoff.*``) all land on the same agent / llm / tool / handoff columns. Of OpenInference's
spans also: an AGENT span named only by its span name (``@tracer.agent(name=...)``) is that agent;
an LLM span whose model is only in ``llm.invocation_parameters`` (a failed call has no
``llm.model_name``) has that model; and the OpenAI Agents SDK's handoff — a TOOL span named
``handoff to {agent}``, with the source agent as ``input.value`` — is a handoff, not a tool.
The newest GenAI conventions' spans (``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``)
land on the same columns as v1.41.0's: their extra attributes (``gen_ai.caller.*``, a tool's
``gen_ai.transfer.*``, cache tokens) promote nothing, and a workflow is never an agent, even one
named by ``gen_ai.agent.name`` (an ``invoke_agent``-named span whose operation is
``invoke_workflow``, as SPEC §13 reads the newest shape). ``_fastflat.c`` follows the same rules
(``fast.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Final, NamedTuple

from reach_otel import semconv as sc

TRACELOOP_REQUEST_TYPE: Final = sc.TRACELOOP_REQUEST_TYPE
OPENINFERENCE_LLM_SYSTEM: Final = sc.OPENINFERENCE_LLM_SYSTEM
EXCEPTION_TYPE: Final = sc.EXCEPTION_TYPE
EXCEPTION_EVENT: Final = sc.EXCEPTION_EVENT
EXCEPTION_MESSAGE: Final = sc.EXCEPTION_MESSAGE

# traceloop.span.kind → gen_ai.operation.name
_TRACELOOP_KINDS: Final = {
    "workflow": sc.OP_WORKFLOW,
    "agent": sc.OP_AGENT,
    "tool": sc.OP_TOOL,
}
# llm.request.type (OpenLLMetry LLM spans) → gen_ai.operation.name
_TRACELOOP_REQUEST_TYPES: Final = {
    "chat": sc.OP_CHAT,
    "completion": sc.OP_TEXT_COMPLETION,
    "embedding": sc.OP_EMBEDDINGS,
}
# openinference.span.kind → gen_ai.operation.name
_OPENINFERENCE_KINDS: Final = {
    "LLM": sc.OP_CHAT,
    "AGENT": sc.OP_AGENT,
    "TOOL": sc.OP_TOOL,
    "EMBEDDING": sc.OP_EMBEDDINGS,
}
# Where llm.invocation_parameters names the model, in priority order (OpenAI's and LangChain's keys).
INVOCATION_MODEL_KEYS: Final = ("model", "model_name")
_LLM: Final = frozenset(sc.LLM_OPERATIONS)


class Promoted(NamedTuple):
    """The flat columns of one span (everything else stays in the JSON attributes)."""

    operation: str | None
    agent: str | None
    tool: str | None
    model: str | None
    provider: str | None
    input_tokens: int | None
    output_tokens: int | None
    handoff_source: str | None
    handoff_target: str | None
    handoff_status: str | None
    handoff_mode: str | None
    hop_count: int | None
    loop_detected: bool | None
    error_type: str | None
    conversation_id: str | None


_Get = Callable[[str], Any]

# Key lists in priority order; a tuple per column keeps the hot path free of argument packing.
_AGENT_SELF: Final = (sc.GEN_AI_AGENT_NAME, sc.OPENINFERENCE_AGENT_NAME)
_AGENT_HANDOFF: Final = (sc.REACH_HANDOFF_SOURCE, sc.GEN_AI_AGENT_NAME, sc.GEN_AI_HANDOFF_FROM_AGENT)
_AGENT_ENCLOSING: Final = (sc.REACH_AGENT_NAME, sc.GEN_AI_AGENT_NAME, sc.OPENINFERENCE_AGENT_NAME)
_TARGET: Final = (sc.REACH_HANDOFF_TARGET, sc.GEN_AI_TRANSFER_TARGET_NAME, sc.GEN_AI_HANDOFF_TO_AGENT)
_MODE: Final = (sc.REACH_HANDOFF_MODE, sc.GEN_AI_TRANSFER_MODE)
_TOOL: Final = (sc.GEN_AI_TOOL_NAME, sc.OPENINFERENCE_TOOL_NAME)
_MODEL: Final = (sc.GEN_AI_REQUEST_MODEL, sc.GEN_AI_RESPONSE_MODEL, sc.OPENINFERENCE_LLM_MODEL_NAME)
_PROVIDER: Final = (
    sc.GEN_AI_PROVIDER_NAME,
    sc.GEN_AI_SYSTEM,
    sc.OPENINFERENCE_LLM_PROVIDER,
    OPENINFERENCE_LLM_SYSTEM,
)
_INPUT: Final = (sc.GEN_AI_USAGE_INPUT_TOKENS, sc.GEN_AI_USAGE_PROMPT_TOKENS, sc.OPENINFERENCE_TOKEN_PROMPT)
_OUTPUT: Final = (
    sc.GEN_AI_USAGE_OUTPUT_TOKENS,
    sc.GEN_AI_USAGE_COMPLETION_TOKENS,
    sc.OPENINFERENCE_TOKEN_COMPLETION,
)
_CONVERSATION: Final = (sc.GEN_AI_CONVERSATION_ID, sc.OPENINFERENCE_SESSION_ID)
_HANDOFF_HINTS: Final = (sc.GEN_AI_HANDOFF_TO_AGENT, sc.GEN_AI_HANDOFF_FROM_AGENT, sc.REACH_HANDOFF_TARGET)
# Read only on spans another key already promotes (an OpenInference TOOL or LLM span).
_PEER_KEYS: Final = (
    sc.OPENINFERENCE_LLM_INVOCATION_PARAMETERS,
    sc.OPENINFERENCE_INPUT_VALUE,
    sc.OPENINFERENCE_OUTPUT_VALUE,
)
# Any of these present means the span may promote something; otherwise a cheap all-None answer.
PROMOTED_KEYS: Final = frozenset(
    {
        sc.GEN_AI_OPERATION_NAME,
        sc.TRACELOOP_SPAN_KIND,
        sc.TRACELOOP_ENTITY_NAME,
        TRACELOOP_REQUEST_TYPE,
        sc.OPENINFERENCE_SPAN_KIND,
        sc.REACH_HOP_COUNT,
        sc.REACH_LOOP_DETECTED,
        sc.REACH_HANDOFF_STATUS,
        sc.ERROR_TYPE,
        *_AGENT_SELF,
        *_AGENT_HANDOFF,
        *_AGENT_ENCLOSING,
        *_TARGET,
        *_MODE,
        *_TOOL,
        *_MODEL,
        *_PROVIDER,
        *_INPUT,
        *_OUTPUT,
        *_CONVERSATION,
        *_PEER_KEYS,
    }
)
_HANDOFF_STATUS: Final = (sc.REACH_HANDOFF_STATUS,)
_HOP_COUNT: Final = (sc.REACH_HOP_COUNT,)
_ERROR_TYPE: Final = (sc.ERROR_TYPE,)
_ENTITY: Final = (sc.TRACELOOP_ENTITY_NAME,)
_new: Final = tuple.__new__
_NOTHING: Final = Promoted(*([None] * len(Promoted._fields)))


def _str(get: _Get, keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = get(key)
        if value.__class__ is str and value:
            return value
    return None


def _int(get: _Get, keys: tuple[str, ...]) -> int | None:
    for key in keys:
        value = get(key)
        # bool is an int subclass; a boolean token count is nonsense, so it is skipped.
        if value.__class__ is int:
            return value if -(2**63) <= value < 2**63 else None
        if value.__class__ is float and value.is_integer() and abs(value) < 2**63:
            return int(value)
    return None


def _int32(value: int | None) -> int | None:
    return value if value is not None and -(2**31) <= value < 2**31 else None


def _operation(get: _Get) -> str | None:
    op = get(sc.GEN_AI_OPERATION_NAME)
    if op.__class__ is str and op:
        return op
    kind = get(sc.TRACELOOP_SPAN_KIND)
    if kind.__class__ is str and kind in _TRACELOOP_KINDS:
        return _TRACELOOP_KINDS[kind]
    request_type = get(TRACELOOP_REQUEST_TYPE)
    if request_type.__class__ is str and request_type in _TRACELOOP_REQUEST_TYPES:
        return _TRACELOOP_REQUEST_TYPES[request_type]
    oi_kind = get(sc.OPENINFERENCE_SPAN_KIND)
    if oi_kind.__class__ is str and oi_kind.upper() in _OPENINFERENCE_KINDS:
        return _OPENINFERENCE_KINDS[oi_kind.upper()]
    if any(get(key) is not None for key in _HANDOFF_HINTS):
        return sc.OP_HANDOFF
    if get(sc.GEN_AI_SYSTEM) is not None or get(sc.GEN_AI_PROVIDER_NAME) is not None:
        return sc.OP_CHAT
    return None


def _from_openinference(get: _Get) -> bool:
    """Whether ``_operation`` took the operation from ``openinference.span.kind`` (only such spans
    take the OpenInference rules below); asked only where one of them may apply."""
    op = get(sc.GEN_AI_OPERATION_NAME)
    if op.__class__ is str and op:
        return False
    kind = get(sc.TRACELOOP_SPAN_KIND)
    if kind.__class__ is str and kind in _TRACELOOP_KINDS:
        return False
    request_type = get(TRACELOOP_REQUEST_TYPE)
    if request_type.__class__ is str and request_type in _TRACELOOP_REQUEST_TYPES:
        return False
    oi_kind = get(sc.OPENINFERENCE_SPAN_KIND)
    return oi_kind.__class__ is str and oi_kind.upper() in _OPENINFERENCE_KINDS


def _named(get: _Get, key: str) -> str | None:
    """An agent name OpenInference recorded as a value, unless its TraceConfig masked it."""
    value = get(key)
    return value if value.__class__ is str and value and value != sc.OPENINFERENCE_REDACTED else None


def _handoff_target(name: str) -> str | None:
    """The target in an Agents SDK handoff span's name (``handoff to X``), None if not one."""
    if name == sc.OPENINFERENCE_HANDOFF_SPAN:
        return None
    return name[len(sc.OPENINFERENCE_HANDOFF_TO) :] or None


def _is_handoff_name(name: str) -> bool:
    return name == sc.OPENINFERENCE_HANDOFF_SPAN or name.startswith(sc.OPENINFERENCE_HANDOFF_TO)


def invocation_model(params: Any) -> str | None:
    """The model named in ``llm.invocation_parameters`` (a JSON object as text), else None — for
    text that is not JSON, or not an object, too. ``_fastflat.c`` reads the same text to the same
    answer, or leaves the request to this function."""
    if params.__class__ is not str:
        return None
    try:
        parsed = json.loads(params)
    except (ValueError, RecursionError):
        return None
    if parsed.__class__ is not dict:
        return None
    for key in INVOCATION_MODEL_KEYS:
        value = parsed.get(key)
        if value.__class__ is str and value:
            return value
    return None


def promote(
    attrs: Mapping[str, Any],
    status_code: int,
    event_names: tuple[str, ...] = (),
    exception_type: str | None = None,
    name: str = "",
) -> Promoted:
    """Pure: the promoted columns for one span's attributes (plus its status, event names and
    span name)."""
    error_from_event = exception_type if status_code == 2 else None
    loop_event = sc.EVENT_LOOP_DETECTED in event_names
    if not (loop_event or error_from_event) and PROMOTED_KEYS.isdisjoint(attrs):
        return _NOTHING
    get = attrs.get
    op = _operation(get)
    tool = _str(get, _TOOL)
    target = None
    if op == sc.OP_TOOL and tool is None and _is_handoff_name(name) and _from_openinference(get):
        # The Agents SDK's handoff, which OpenInference records as a TOOL span with no tool name.
        op, handoff = sc.OP_HANDOFF, True
        agent = _named(get, sc.OPENINFERENCE_INPUT_VALUE)
        target = _handoff_target(name) or _named(get, sc.OPENINFERENCE_OUTPUT_VALUE)
    else:
        handoff = op == sc.OP_HANDOFF
        if op == sc.OP_AGENT:
            agent = _str(get, _AGENT_SELF) or _str(get, _ENTITY)
            if agent is None and name and _from_openinference(get):
                agent = name  # @tracer.agent(name=...): the span name is all there is
        elif handoff:
            agent = _str(get, _AGENT_HANDOFF)
            target = _str(get, _TARGET)
        elif op == sc.OP_WORKFLOW:
            agent = None  # a workflow runs agents, it is none, whatever name it carries
        else:
            agent = _str(get, _AGENT_ENCLOSING)
        if tool is None and op == sc.OP_TOOL:
            tool = _str(get, _ENTITY)
    model = _str(get, _MODEL)
    if model is None and op in _LLM:
        model = invocation_model(get(sc.OPENINFERENCE_LLM_INVOCATION_PARAMETERS))
    loop = get(sc.REACH_LOOP_DETECTED)
    # Positional, in Promoted's field order: a keyword NamedTuple call costs ~1 µs per span.
    return _new(
        Promoted,
        (
            op,
            agent,
            tool,
            model,
            _str(get, _PROVIDER),
            _int(get, _INPUT),
            _int(get, _OUTPUT),
            agent if handoff else None,  # handoff_source
            target,
            _str(get, _HANDOFF_STATUS) if handoff else None,
            _str(get, _MODE) if handoff else None,
            _int32(_int(get, _HOP_COUNT)),
            True if loop_event else (loop if loop.__class__ is bool else None),
            _str(get, _ERROR_TYPE) or error_from_event,
            _str(get, _CONVERSATION),
        ),
    )

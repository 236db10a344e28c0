"""Promote the attributes metrics and search need into flat columns, whatever instrumented the span.

Our own spans (GenAI semconv + ``reach.*``), OpenLLMetry (``traceloop.*``, ``gen_ai.system``),
OpenInference (``openinference.span.kind``, ``llm.*``) and the OpenAI Agents SDK mapping
(``gen_ai.handoff.*``) all land on the same agent / llm / tool / handoff columns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NamedTuple

from reach_otel import semconv as sc

# Keys other instrumentations write that reach_otel.semconv does not (yet) name.
TRACELOOP_REQUEST_TYPE: Final = "llm.request.type"
OPENINFERENCE_LLM_SYSTEM: Final = "llm.system"
EXCEPTION_TYPE: Final = "exception.type"
EXCEPTION_EVENT: Final = "exception"
EXCEPTION_MESSAGE: Final = "exception.message"

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


def _str(attrs: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = attrs.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _int(attrs: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = attrs.get(key)
        # bool is an int subclass; a boolean token count is nonsense, so skip it.
        if isinstance(value, int) and not isinstance(value, bool):
            return value if -(2**63) <= value < 2**63 else None
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
            return int(value)
    return None


def _int32(value: int | None) -> int | None:
    return value if value is not None and -(2**31) <= value < 2**31 else None


def _operation(attrs: Mapping[str, Any]) -> str | None:
    op = _str(attrs, sc.GEN_AI_OPERATION_NAME)
    if op is not None:
        return op
    kind = _str(attrs, sc.TRACELOOP_SPAN_KIND)
    if kind is not None and kind in _TRACELOOP_KINDS:
        return _TRACELOOP_KINDS[kind]
    request_type = _str(attrs, TRACELOOP_REQUEST_TYPE)
    if request_type is not None and request_type in _TRACELOOP_REQUEST_TYPES:
        return _TRACELOOP_REQUEST_TYPES[request_type]
    oi_kind = _str(attrs, sc.OPENINFERENCE_SPAN_KIND)
    if oi_kind is not None and oi_kind.upper() in _OPENINFERENCE_KINDS:
        return _OPENINFERENCE_KINDS[oi_kind.upper()]
    if (
        sc.GEN_AI_HANDOFF_TO_AGENT in attrs
        or sc.GEN_AI_HANDOFF_FROM_AGENT in attrs
        or sc.REACH_HANDOFF_TARGET in attrs
    ):
        return sc.OP_HANDOFF
    if sc.GEN_AI_SYSTEM in attrs or sc.GEN_AI_PROVIDER_NAME in attrs:
        return sc.OP_CHAT
    return None


def promote(
    attrs: Mapping[str, Any],
    status_code: int,
    event_names: tuple[str, ...] = (),
    exception_type: str | None = None,
) -> Promoted:
    """Pure: the promoted columns for one span's attributes (plus its status and event names)."""
    op = _operation(attrs)
    entity = _str(attrs, sc.TRACELOOP_ENTITY_NAME)
    if op == sc.OP_AGENT:
        agent = _str(attrs, sc.GEN_AI_AGENT_NAME, sc.OPENINFERENCE_AGENT_NAME) or entity
    elif op == sc.OP_HANDOFF:
        agent = _str(attrs, sc.REACH_HANDOFF_SOURCE, sc.GEN_AI_AGENT_NAME, sc.GEN_AI_HANDOFF_FROM_AGENT)
    else:
        agent = _str(attrs, sc.REACH_AGENT_NAME, sc.GEN_AI_AGENT_NAME, sc.OPENINFERENCE_AGENT_NAME)
    tool = _str(attrs, sc.GEN_AI_TOOL_NAME, sc.OPENINFERENCE_TOOL_NAME)
    if tool is None and op == sc.OP_TOOL:
        tool = entity
    handoff_source = handoff_target = None
    if op == sc.OP_HANDOFF:
        handoff_source = agent
        handoff_target = _str(
            attrs, sc.REACH_HANDOFF_TARGET, sc.GEN_AI_TRANSFER_TARGET_NAME, sc.GEN_AI_HANDOFF_TO_AGENT
        )
    loop = attrs.get(sc.REACH_LOOP_DETECTED)
    loop_detected: bool | None = loop if isinstance(loop, bool) else None
    if sc.EVENT_LOOP_DETECTED in event_names:
        loop_detected = True
    error_type = _str(attrs, sc.ERROR_TYPE)
    if error_type is None and status_code == 2:
        error_type = exception_type
    return Promoted(
        operation=op,
        agent=agent,
        tool=tool,
        model=_str(attrs, sc.GEN_AI_REQUEST_MODEL, sc.GEN_AI_RESPONSE_MODEL, sc.OPENINFERENCE_LLM_MODEL_NAME),
        provider=_str(
            attrs,
            sc.GEN_AI_PROVIDER_NAME,
            sc.GEN_AI_SYSTEM,
            sc.OPENINFERENCE_LLM_PROVIDER,
            OPENINFERENCE_LLM_SYSTEM,
        ),
        input_tokens=_int(
            attrs, sc.GEN_AI_USAGE_INPUT_TOKENS, sc.GEN_AI_USAGE_PROMPT_TOKENS, sc.OPENINFERENCE_TOKEN_PROMPT
        ),
        output_tokens=_int(
            attrs,
            sc.GEN_AI_USAGE_OUTPUT_TOKENS,
            sc.GEN_AI_USAGE_COMPLETION_TOKENS,
            sc.OPENINFERENCE_TOKEN_COMPLETION,
        ),
        handoff_source=handoff_source,
        handoff_target=handoff_target,
        handoff_status=_str(attrs, sc.REACH_HANDOFF_STATUS) if op == sc.OP_HANDOFF else None,
        handoff_mode=(
            _str(attrs, sc.REACH_HANDOFF_MODE, sc.GEN_AI_TRANSFER_MODE) if op == sc.OP_HANDOFF else None
        ),
        hop_count=_int32(_int(attrs, sc.REACH_HOP_COUNT)),
        loop_detected=loop_detected,
        error_type=error_type,
        conversation_id=_str(attrs, sc.GEN_AI_CONVERSATION_ID, sc.OPENINFERENCE_SESSION_ID),
    )

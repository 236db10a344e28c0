"""Every span name, attribute key, event name and baggage key reach-otel writes or reads.

GenAI keys follow the OpenTelemetry GenAI semantic conventions (v1.41.0, or the newest under
``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``: see ``_shape``); our own live under
``reach.*``. The collector imports this module too, so the two sides can never drift apart.
"""

from __future__ import annotations

from typing import Final

# --- operation names (gen_ai.operation.name values) and span name prefixes --------------------
OP_WORKFLOW: Final = "invoke_workflow"
OP_AGENT: Final = "invoke_agent"
OP_CHAT: Final = "chat"
OP_TEXT_COMPLETION: Final = "text_completion"
OP_GENERATE_CONTENT: Final = "generate_content"
OP_EMBEDDINGS: Final = "embeddings"
OP_TOOL: Final = "execute_tool"
OP_HANDOFF: Final = "handoff"
LLM_OPERATIONS: Final = (OP_CHAT, OP_TEXT_COMPLETION, OP_GENERATE_CONTENT, OP_EMBEDDINGS)

HEARTBEAT_SPAN_NAME: Final = "heartbeat"

# --- GenAI semantic-convention attributes -------------------------------------------------------
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_SYSTEM: Final = "gen_ai.system"  # deprecated; read from other tools' spans only
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_WORKFLOW_NAME: Final = "gen_ai.workflow.name"

GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_AGENT_ID: Final = "gen_ai.agent.id"
GEN_AI_AGENT_DESCRIPTION: Final = "gen_ai.agent.description"

GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_REQUEST_STREAM: Final = "gen_ai.request.stream"
GEN_AI_REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
GEN_AI_REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
GEN_AI_REQUEST_TOP_P: Final = "gen_ai.request.top_p"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_RESPONSE_ID: Final = "gen_ai.response.id"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_PROMPT_TOKENS: Final = "gen_ai.usage.prompt_tokens"  # deprecated alias, read only
GEN_AI_USAGE_COMPLETION_TOKENS: Final = "gen_ai.usage.completion_tokens"  # deprecated alias

GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GEN_AI_TOOL_TYPE: Final = "gen_ai.tool.type"
GEN_AI_TOOL_DESCRIPTION: Final = "gen_ai.tool.description"
TOOL_TYPE_FUNCTION: Final = "function"

GEN_AI_TRANSFER_TARGET_NAME: Final = "gen_ai.transfer.target.name"
GEN_AI_TRANSFER_MODE: Final = "gen_ai.transfer.mode"
GEN_AI_HANDOFF_FROM_AGENT: Final = "gen_ai.handoff.from_agent"
GEN_AI_HANDOFF_TO_AGENT: Final = "gen_ai.handoff.to_agent"
TRANSFER_PASS_CONTROL: Final = "pass_control"
TRANSFER_RETURN_TO_CALLER: Final = "return_to_caller"

# Cache tokens. v1.41.0, our default shape, names them cache_read / cache_creation
# (open-telemetry/semantic-conventions docs/gen-ai/anthropic.md; semantic-conventions-genai
# model/gen-ai/registry.yaml); the newest conventions rename cache_creation to cache_write
# (semantic-conventions-genai docs/gen-ai/non-normative/migration.md, PR #440).
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS: Final = "gen_ai.usage.cache_write.input_tokens"

# --- the newest GenAI conventions only (OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental) ---
# From semantic-conventions-genai docs/gen-ai/non-normative/examples-agent-interactions.md and
# model/gen-ai/spans.yaml. An invoke_agent CLIENT span names its immediate logical caller, an
# agent or a workflow (the gen_ai.invoke_agent.caller.client refinement); a tool that transfers
# control to another agent carries gen_ai.agent.name (the source) and gen_ai.transfer.mode,
# .target.name and .target.type (the gen_ai.execute_tool.transfer.internal refinement; its span
# keeps the fallback name ``execute_tool {tool}``, the target being known only after it starts).
GEN_AI_CALLER_TYPE: Final = "gen_ai.caller.type"
GEN_AI_CALLER_NAME: Final = "gen_ai.caller.name"
CALLER_AGENT: Final = "agent"
CALLER_WORKFLOW: Final = "workflow"
GEN_AI_TRANSFER_TARGET_TYPE: Final = "gen_ai.transfer.target.type"
TRANSFER_TARGET_AGENT: Final = "agent"

# Content attributes: written only when content capture is on.
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
GEN_AI_SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
GEN_AI_TOOL_DEFINITIONS: Final = "gen_ai.tool.definitions"
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"

# --- general OpenTelemetry attributes -----------------------------------------------------------
ERROR_TYPE: Final = "error.type"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"
USER_ID: Final = "user.id"
SERVICE_NAME: Final = "service.name"
SERVICE_VERSION: Final = "service.version"  # a resource attribute: the release that made a span
HTTP_REQUEST_METHOD: Final = "http.request.method"
HTTP_RESPONSE_STATUS_CODE: Final = "http.response.status_code"
URL_FULL: Final = "url.full"
URL_PATH: Final = "url.path"
URL_SCHEME: Final = "url.scheme"
CLIENT_ADDRESS: Final = "client.address"

# --- Model Context Protocol (GenAI MCP semantic conventions) -------------------------------------
MCP_METHOD_NAME: Final = "mcp.method.name"
MCP_SESSION_ID: Final = "mcp.session.id"
MCP_PROTOCOL_VERSION: Final = "mcp.protocol.version"
MCP_RESOURCE_URI: Final = "mcp.resource.uri"
GEN_AI_PROMPT_NAME: Final = "gen_ai.prompt.name"
JSONRPC_REQUEST_ID: Final = "jsonrpc.request.id"
RPC_RESPONSE_STATUS_CODE: Final = "rpc.response.status_code"
NETWORK_TRANSPORT: Final = "network.transport"
MCP_TOOLS_CALL: Final = "tools/call"
MCP_PROMPTS_GET: Final = "prompts/get"
MCP_TOOL_ERROR: Final = "tool_error"  # error.type of a tools/call whose result has isError true

# --- Agent2Agent protocol (a2a-sdk): one span per A2A request, client and server -----------------
A2A_METHOD_NAME: Final = "a2a.method.name"  # message/send, message/stream, tasks/get, ...
A2A_TASK_ID: Final = "a2a.task.id"
A2A_TASK_STATE: Final = "a2a.task.state"  # submitted, working, completed, failed, input-required, ...
A2A_MESSAGE_ID: Final = "a2a.message.id"  # the message the request sends
A2A_AGENT_NAME: Final = "a2a.agent.name"  # the AgentCard name: addressed (client) or serving (server)
A2A_MESSAGE_SEND: Final = "message/send"
A2A_MESSAGE_STREAM: Final = "message/stream"
A2A_TASK_FAILED: Final = "task_failed"  # error.type of a request or agent run whose task ended failed
RPC_SYSTEM: Final = "rpc.system"  # jsonrpc, when the A2A request came over JSON-RPC
RPC_METHOD: Final = "rpc.method"  # the method as on the wire: SendMessage (A2A 1.0), message/send (0.3)

# --- LangGraph: where in the graph an agent node's span ran --------------------------------------
LANGGRAPH_NODE: Final = "langgraph.node"  # the graph node the agent span is the run of
LANGGRAPH_STEP: Final = "langgraph.step"  # the superstep it ran in (LangGraph's langgraph_step)

# --- reach.* attributes --------------------------------------------------------------------------
REACH_AGENT_NAME: Final = "reach.agent.name"  # the enclosing agent, on LLM and tool spans
REACH_AGENT_ROLE: Final = "reach.agent.role"
REACH_AGENT_LLM_CALLS: Final = "reach.agent.llm_calls"
REACH_AGENT_TOOL_CALLS: Final = "reach.agent.tool_calls"
REACH_LLM_TOOL_CALLS_REQUESTED: Final = "reach.llm.tool_calls_requested"
REACH_TASK_ID: Final = "reach.task.id"
REACH_SESSION_ID: Final = "reach.session.id"

REACH_HOP_COUNT: Final = "reach.hop.count"
REACH_HOP_PATH: Final = "reach.hop.path"
REACH_HOP_LIMIT: Final = "reach.hop.limit"
REACH_HOP_LIMIT_EXCEEDED: Final = "reach.hop.limit_exceeded"
REACH_LOOP_DETECTED: Final = "reach.loop.detected"
REACH_LOOP_CYCLE: Final = "reach.loop.cycle"

REACH_HANDOFF_SOURCE: Final = "reach.handoff.source"
REACH_HANDOFF_TARGET: Final = "reach.handoff.target"
REACH_HANDOFF_MODE: Final = "reach.handoff.mode"
REACH_HANDOFF_ID: Final = "reach.handoff.id"
REACH_HANDOFF_REASON: Final = "reach.handoff.reason"
REACH_HANDOFF_STATUS: Final = "reach.handoff.status"
REACH_HANDOFF_TRANSITIONS: Final = "reach.handoff.transitions"  # 0 = state machine not used
REACH_HANDOFF_EVENT: Final = "reach.handoff.event"
REACH_HANDOFF_FROM_STATUS: Final = "reach.handoff.from_status"
REACH_HANDOFF_IDEMPOTENCY_KEY: Final = "reach.handoff.idempotency_key"

REACH_GATE: Final = "reach.gate"
REACH_GATE_NAME: Final = "reach.gate.name"
REACH_GATE_LIMIT: Final = "reach.gate.limit"
REACH_GATE_OBSERVED: Final = "reach.gate.observed"

EXCEPTION_EVENT: Final = "exception"
EXCEPTION_TYPE: Final = "exception.type"
EXCEPTION_MESSAGE: Final = "exception.message"

# --- events --------------------------------------------------------------------------------------
EVENT_HOP_LIMIT_EXCEEDED: Final = "reach.hop.limit_exceeded"
EVENT_LOOP_DETECTED: Final = "reach.loop.detected"
EVENT_ILLEGAL_TRANSITION: Final = "reach.handoff.illegal_transition"
EVENT_HANDOFF_TRANSITION: Final = "reach.handoff.transition"
EVENT_GATE_TRIGGERED: Final = "reach.gate.triggered"

# --- GenAI evaluations (the gen_ai.evaluation.result event: a log record, or a span event) -------
GEN_AI_EVALUATION_RESULT: Final = "gen_ai.evaluation.result"  # the event's name
GEN_AI_EVALUATION_NAME: Final = "gen_ai.evaluation.name"  # required: what was evaluated for
GEN_AI_EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"
# The log record attribute naming its event, for SDKs older than LogRecord.event_name.
EVENT_NAME: Final = "event.name"
EVALUATION_USER_FEEDBACK: Final = "user_feedback"  # the evaluation name of a user's verdict

# --- W3C baggage keys (the only things that travel in baggage) -----------------------------------
BAGGAGE_HOPS: Final = "reach.hops"
BAGGAGE_PATH: Final = "reach.path"
BAGGAGE_SESSION_ID: Final = "reach.session"  # → gen_ai.conversation.id on the far side
BAGGAGE_USER_ID: Final = "reach.user"  # → user.id
BAGGAGE_TASK_ID: Final = "reach.task"  # → reach.task.id

# --- the /invoke body -----------------------------------------------------------------------------
INVOKE_CONTEXT: Final = "context"
INVOKE_TRACE_ID: Final = "trace_id"
INVOKE_TRACEPARENT: Final = "traceparent"
INVOKE_TRACESTATE: Final = "tracestate"
INVOKE_BAGGAGE: Final = "baggage"

# --- other instrumentations' keys, normalised by the collector at ingest ------------------------
TRACELOOP_SPAN_KIND: Final = "traceloop.span.kind"
TRACELOOP_ENTITY_NAME: Final = "traceloop.entity.name"
TRACELOOP_REQUEST_TYPE: Final = "llm.request.type"
OPENINFERENCE_SPAN_KIND: Final = "openinference.span.kind"
OPENINFERENCE_LLM_MODEL_NAME: Final = "llm.model_name"
OPENINFERENCE_LLM_PROVIDER: Final = "llm.provider"
OPENINFERENCE_LLM_SYSTEM: Final = "llm.system"
OPENINFERENCE_TOKEN_PROMPT: Final = "llm.token_count.prompt"
OPENINFERENCE_TOKEN_COMPLETION: Final = "llm.token_count.completion"
OPENINFERENCE_TOOL_NAME: Final = "tool.name"
OPENINFERENCE_AGENT_NAME: Final = "agent.name"
OPENINFERENCE_SESSION_ID: Final = "session.id"
OPENINFERENCE_LLM_INVOCATION_PARAMETERS: Final = "llm.invocation_parameters"  # a JSON object as text
OPENINFERENCE_INPUT_VALUE: Final = "input.value"
OPENINFERENCE_OUTPUT_VALUE: Final = "output.value"
OPENINFERENCE_REDACTED: Final = "__REDACTED__"  # what OpenInference's TraceConfig masks a value with
# The OpenAI Agents SDK's handoff span, as OpenInference's instrumentation names it (a TOOL span).
OPENINFERENCE_HANDOFF_SPAN: Final = "handoff"
OPENINFERENCE_HANDOFF_TO: Final = "handoff to "


def workflow_span_name(name: str) -> str:
    return f"{OP_WORKFLOW} {name}"


def agent_span_name(name: str) -> str:
    return f"{OP_AGENT} {name}"


def llm_span_name(model: str, operation: str = OP_CHAT) -> str:
    return f"{operation} {model}" if model else operation


def tool_span_name(name: str) -> str:
    return f"{OP_TOOL} {name}"


def handoff_span_name(target: str) -> str:
    return f"{OP_HANDOFF} {target}"


def mcp_span_name(method: str, target: str | None = None) -> str:
    """``{mcp.method.name} {target}``, the target being the tool's or prompt's name when there is one."""
    return f"{method} {target}" if target else method

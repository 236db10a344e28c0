// Attribute, event and operation names the console reads: the same values as reach_otel/semconv.py
// (a test checks every constant here against that module, so the two cannot drift apart).

export const OP_WORKFLOW = "invoke_workflow";
export const OP_AGENT = "invoke_agent";
export const OP_CHAT = "chat";
export const OP_TEXT_COMPLETION = "text_completion";
export const OP_GENERATE_CONTENT = "generate_content";
export const OP_EMBEDDINGS = "embeddings";
export const OP_TOOL = "execute_tool";
export const OP_HANDOFF = "handoff";
export const LLM_OPERATIONS = [OP_CHAT, OP_TEXT_COMPLETION, OP_GENERATE_CONTENT, OP_EMBEDDINGS];

export const GEN_AI_OPERATION_NAME = "gen_ai.operation.name";
export const GEN_AI_AGENT_NAME = "gen_ai.agent.name";
export const GEN_AI_REQUEST_MODEL = "gen_ai.request.model";
export const GEN_AI_RESPONSE_MODEL = "gen_ai.response.model";
export const GEN_AI_TOOL_NAME = "gen_ai.tool.name";
export const GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens";
export const GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens";
export const GEN_AI_USAGE_PROMPT_TOKENS = "gen_ai.usage.prompt_tokens";
export const GEN_AI_USAGE_COMPLETION_TOKENS = "gen_ai.usage.completion_tokens";
export const GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages";
export const GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages";
export const GEN_AI_SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions";
export const GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments";
export const GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result";
export const GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id";
export const ERROR_TYPE = "error.type";
export const SERVICE_NAME = "service.name";

export const REACH_AGENT_NAME = "reach.agent.name";
export const REACH_HOP_COUNT = "reach.hop.count";
export const REACH_HOP_LIMIT_EXCEEDED = "reach.hop.limit_exceeded";
export const REACH_LOOP_DETECTED = "reach.loop.detected";
export const REACH_LOOP_CYCLE = "reach.loop.cycle";
export const REACH_HANDOFF_SOURCE = "reach.handoff.source";
export const REACH_HANDOFF_TARGET = "reach.handoff.target";
export const REACH_HANDOFF_STATUS = "reach.handoff.status";
export const REACH_HANDOFF_REASON = "reach.handoff.reason";
export const REACH_GATE_NAME = "reach.gate.name";
export const REACH_GATE_LIMIT = "reach.gate.limit";
export const REACH_GATE_OBSERVED = "reach.gate.observed";

export const EXCEPTION_EVENT = "exception";
export const EXCEPTION_TYPE = "exception.type";
export const EXCEPTION_MESSAGE = "exception.message";
export const EVENT_LOOP_DETECTED = "reach.loop.detected";
export const EVENT_HOP_LIMIT_EXCEEDED = "reach.hop.limit_exceeded";
export const EVENT_GATE_TRIGGERED = "reach.gate.triggered";

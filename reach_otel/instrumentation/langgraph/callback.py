"""The LangChain callback handler that turns a LangGraph run into workflow, agent, chat, tool and
handoff spans.

LangGraph reports every graph, node task, model and tool run to the callback handlers of its
config; the instrumentor adds this one to every run through LangChain's configure hook. Spans are
parented through the run tree, never through whatever context happens to be current; a span is
made current only where it cannot outlive its run (:mod:`.activation`), so that what a node's own
code calls (the OpenAI client, ``@reach_otel.tool`` functions) nests under it. Every step is
guarded: the graph never sees our failures, except :class:`~reach_otel.HopLimitExceeded` when the
application asked for it (``on_loop="raise"``).
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langgraph.errors import GraphBubbleUp, GraphRecursionError
from opentelemetry import context as otel_context

from reach_otel import semconv as sc
from reach_otel._safety import logger
from reach_otel.errors import HopLimitExceeded
from reach_otel.handler import TelemetryHandler
from reach_otel.instrumentation.langgraph import agents, extract, references
from reach_otel.instrumentation.langgraph.activation import (
    async_dispatch,
    current_task,
    in_context,
    may_attach,
)
from reach_otel.instrumentation.langgraph.runs import Kind, Run, Scope
from reach_otel.invocations import LLMInvocation, ToolInvocation

HandlerRef = Callable[[], TelemetryHandler]
F = TypeVar("F", bound=Callable[..., Any])

_OPENAI_INSTRUMENTATION = "reach_otel.instrumentation.openai"
_OPENAI_PROVIDERS = frozenset({"openai", "azure.ai.openai"})
#: Exceptions that end a run without it failing: LangGraph's control flow, a stream closed early.
_FLOW = (GraphBubbleUp, GeneratorExit)
#: The tag of a node task's first step, its own function (the rest write its output to channels).
_NODE_FUNCTION = "seq:step:1"


def _guarded(fn: F) -> F:
    """A callback: failures are logged at DEBUG and swallowed; only an asked-for hop limit passes."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except HopLimitExceeded:
            raise
        except Exception:  # telemetry must never raise into user code
            logger.debug("reach_otel: langgraph %s failed", fn.__name__, exc_info=True)
            return None

    return wrapper  # type: ignore[return-value]


def openai_instrumentation_active() -> bool:
    """True while reach_otel's OpenAI instrumentation is applied: it then makes the chat spans."""
    module = sys.modules.get(_OPENAI_INSTRUMENTATION)
    return bool(module is not None and getattr(module, "is_active", lambda: False)())


class LangGraphCallbackHandler(BaseCallbackHandler):
    """Maps LangGraph's callback runs onto reach_otel spans; inert after ``deactivate()``."""

    run_inline = True  # called in the run's own Context, in order, never on an executor
    ignore_retriever = True
    ignore_retry = True
    ignore_custom_event = True

    def __init__(self, handler: HandlerRef) -> None:
        self._handler = handler
        self.active = True
        # Plain dict set/pop are atomic under the GIL; runs report from any thread or task.
        self._runs: dict[UUID, Run] = {}

    @property
    def raise_error(self) -> bool:  # type: ignore[override]
        """LangChain re-raises a handler's exception only when this is true: our hop limit, if asked."""
        try:
            return self.active and self._handler().settings.on_loop == "raise"
        except Exception:  # telemetry must never raise into user code
            return False

    def activate(self, handler: HandlerRef) -> None:
        self._handler = handler
        self.active = True

    def deactivate(self) -> None:
        """Start no new spans; runs already open still end."""
        self.active = False

    # -- a node's own code ----------------------------------------------------------------------
    @_guarded
    def context_for_code(self, runnable: Any, config: Any) -> otel_context.Context | None:
        """The context a function LangGraph runs under one of our runs starts in: the run's span.

        A node whose function refers to a chat model or a graph is an agent from its first line
        (unless an agent encloses it), so what it does before its first model call nests under
        its agent span too. None when the run is not one of ours.
        """
        callbacks = config.get("callbacks") if isinstance(config, Mapping) else None
        parent_run_id = getattr(callbacks, "parent_run_id", None)
        run = self._runs.get(parent_run_id) if isinstance(parent_run_id, UUID) else None
        if run is None:
            return None
        if (
            run.kind is Kind.NODE
            and run.agent is None
            and self.active
            and _NODE_FUNCTION in (getattr(callbacks, "tags", None) or ())
        ):
            self._known_agent(run, runnable)
        return run.ctx()

    @_guarded
    def _known_agent(self, node: Run, runnable: Any) -> None:
        """Guarded on its own: whatever fails here, the node's code still runs in its trace."""
        if references.reaches_a_model(runnable):
            agents.on_node_code(node)

    # -- chains: graphs, nodes, everything else ---------------------------------------------------
    @_guarded
    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        parent = self._runs.get(parent_run_id) if parent_run_id is not None else None
        name = kwargs.get("name") or (serialized or {}).get("name") or "graph"
        if parent is None:
            if self.active and extract.is_graph_root(metadata):
                self._start_root(run_id, str(name), metadata)
            return
        step = extract.node_step(name, tags, metadata)
        if step is None:
            run = Run(Kind.OTHER, str(name), parent.handler, parent, start_ns=time.time_ns())
            self._runs[run_id] = run
            if parent.kind is Kind.NODE and may_attach(run, async_dispatch()):
                run.activate()  # a node that is no function (a RunnableLambda, a generator) runs in its trace
            return
        if parent.scope is None:  # the first node of a graph run inside a node: a subgraph
            parent.kind, parent.scope = Kind.GRAPH, Scope()
            promoted = agents.on_subgraph(parent)
            if promoted is not None and may_attach(parent, async_dispatch()):
                otel_context.attach(promoted.ctx)  # this Context is the subgraph's own: it ends with it
        node = Run(Kind.NODE, str(name), parent.handler, parent, step=step, start_ns=time.time_ns())
        scope = parent.scope
        scope.last_step = max(scope.last_step, step)
        override = extract.agent_override(metadata)
        node.veto = override is False
        if isinstance(override, str):
            node.agent_name = override
        agents.claim(node, scope)
        self._runs[run_id] = node
        if override is True or isinstance(override, str):
            agents.promote(node)
        if may_attach(node, async_dispatch()):
            node.activate()

    def _start_root(self, run_id: UUID, name: str, metadata: Mapping[str, Any] | None) -> None:
        handler = self._handler()
        thread = (metadata or {}).get("thread_id")
        # The thread is the conversation of every span of the run (a session's id wins over it).
        workflow = handler.start_workflow(name, conversation_id=thread if isinstance(thread, str) else None)
        if workflow is None:
            return
        root = Run(Kind.ROOT, name, handler, own=workflow.ctx, inv=workflow, scope=Scope())
        root.start_ns, root.task = time.time_ns(), current_task()
        lc_agent = extract.agent_name(metadata)
        if lc_agent:  # a create_agent graph: the whole run is that agent
            agents.start_agent(root, lc_agent, root.start_ns, parent=workflow.ctx)
        self._runs[run_id] = root  # not attached: the caller's Context stays as it was

    @_guarded
    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        run = self._runs.pop(run_id, None)
        if run is not None:
            self._end(run, outputs, None)

    @_guarded
    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        run = self._runs.pop(run_id, None)
        if run is not None:
            self._end(run, None, error)

    def _end(self, run: Run, output: Any, error: BaseException | None) -> None:
        flow: BaseException | None = None
        if isinstance(error, _FLOW):
            flow, error = error, None
        try:
            if run.kind is Kind.NODE:
                self._decided(run, output if flow is None else flow)
                agents.finish_node(run, error)
            elif run.kind is Kind.GRAPH:
                agents.close_scope(run.scope)
                agents.finish_node(run, error)
            elif run.kind is Kind.ROOT:
                self._end_root(run, error)
        finally:
            run.deactivate()

    def _decided(self, node: Run, outcome: Any) -> None:
        """Where a node sent control: a Command's targets, or a worker's hand-back to its supervisor."""
        holder = node.agent_run()
        if holder is None or holder.kind is not Kind.NODE or not self.active:
            return
        targets, to_parent = extract.command_targets(outcome)
        if targets:
            home = node.home()
            scope = node.parent_scope() if to_parent else (home.scope if home is not None else None)
            agents.remember(scope, targets, holder.agent, "Command(goto)")
        if node.agent is not None:
            back = extract.handed_back_to(outcome)
            home = node.home()
            if back is not None and home is not None:
                agents.remember(home.scope, [back[0]], node.agent, back[1])

    def _end_root(self, root: Run, error: BaseException | None) -> None:
        agents.close_scope(root.scope)
        if isinstance(error, GraphRecursionError):  # LangGraph's own step gate
            scope = root.scope
            observed = scope.last_step if scope is not None else None
            limit = extract.recursion_limit(error)
            gate = root.handler.gate
            in_context(root.ctx(), lambda: gate("recursion_limit", limit=limit, observed=observed))
        agents.finish_node(root, error)
        workflow = root.inv
        if workflow is not None:
            if error is None:
                workflow.stop()
            else:
                workflow.fail(error)

    # -- chat models ------------------------------------------------------------------------------
    @_guarded
    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: Sequence[Sequence[Any]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._start_model(serialized, messages, run_id, parent_run_id, metadata, kwargs, sc.OP_CHAT)

    @_guarded
    def on_llm_start(
        self,
        serialized: dict[str, Any] | None,
        prompts: list[str],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        batches = [[{"role": "user", "content": p}] for p in prompts]
        self._start_model(serialized, batches, run_id, parent_run_id, metadata, kwargs, sc.OP_TEXT_COMPLETION)

    def _start_model(
        self,
        serialized: dict[str, Any] | None,
        messages: Any,
        run_id: UUID,
        parent_run_id: UUID | None,
        metadata: dict[str, Any] | None,
        kwargs: dict[str, Any],
        operation: str,
    ) -> None:
        parent = self._runs.get(parent_run_id) if parent_run_id is not None else None
        if parent is None:
            return
        attach = may_attach(parent, async_dispatch(2))
        if self.active:
            promoted = agents.on_model_call(parent)
            if promoted is not None and attach:
                otel_context.attach(promoted.ctx)  # the node's own Context: the rest of it runs as the agent
        run = Run(Kind.CHAT, "chat", parent.handler, parent)
        params = kwargs.get("invocation_params")
        model, provider, stream = extract.chat_request(serialized, metadata, params)
        deferred = (
            provider in _OPENAI_PROVIDERS
            and "response_format" not in (params or {})
            and openai_instrumentation_active()
        )
        if self.active and not deferred:  # else the OpenAI instrumentation makes the span, here
            inv: LLMInvocation | None = in_context(
                parent.ctx(),
                lambda: parent.handler.start_llm(
                    model,
                    provider,
                    operation=operation,
                    stream=stream,
                    request_attributes=extract.request_attributes(params),
                    unless_nested=True,
                ),
            )
            if inv is not None:
                run.inv, run.own = inv, inv.ctx
                if inv.capture:
                    inv.set_request_messages(extract.messages_of(messages))
        self._runs[run_id] = run
        if attach:
            run.activate()

    @_guarded
    def on_llm_new_token(self, token: Any, *, run_id: UUID, **kwargs: Any) -> None:
        run = self._runs.get(run_id)
        if run is not None and isinstance(run.inv, LLMInvocation):
            run.inv.mark_first_chunk()

    @_guarded
    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        run = self._runs.pop(run_id, None)
        if run is None:
            return
        try:
            inv = run.inv
            if isinstance(inv, LLMInvocation):
                attrs = extract.chat_response(response)
                if attrs and inv.span.is_recording():
                    inv.span.set_attributes(attrs)
                inv.record_usage(*extract.chat_usage(response))
                inv.stop(extract.chat_text(response))
        finally:
            run.deactivate()

    @_guarded
    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        run = self._runs.pop(run_id, None)
        if run is None:
            return
        try:
            if run.inv is not None:
                run.inv.fail(error, _error_code(error))
        finally:
            run.deactivate()

    # -- tools ------------------------------------------------------------------------------------
    @_guarded
    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        parent = self._runs.get(parent_run_id) if parent_run_id is not None else None
        if parent is None:
            return
        name = extract.tool_name(serialized, kwargs)
        run = Run(Kind.TOOL, name, parent.handler, parent)
        destination = extract.handoff_destination(name, metadata)
        if not self.active:
            pass
        elif destination is not None:  # a handoff tool: the handoff span, not a tool call
            self._start_handoff_tool(run, parent, destination)
        else:
            description = (serialized or {}).get("description")
            tool: ToolInvocation | None = in_context(
                parent.ctx(),
                lambda: parent.handler.start_tool(
                    name,
                    call_id=kwargs.get("tool_call_id"),
                    description=description if isinstance(description, str) else None,
                ),
            )
            if tool is not None:
                run.inv, run.own = tool, tool.ctx
                tool.set_arguments(inputs if inputs is not None else input_str)
        self._runs[run_id] = run
        run.activate()

    def _start_handoff_tool(self, run: Run, parent: Run, destination: str) -> None:
        run.destination = destination
        scope, source = agents.target_scope(parent)
        if scope is None or source is None:
            return
        handoff = agents.open_handoff(source, destination, run.name, None, parent.ctx())
        if handoff is None:
            return
        previous = scope.pending.pop(destination, None)
        if previous is not None:  # decided twice before the target ran: the first never started
            previous.stop()
        scope.pending[destination] = handoff
        run.handoff, run.pending_in = handoff, scope

    @_guarded
    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        run = self._runs.pop(run_id, None)
        if run is None:
            return
        try:
            if run.inv is not None:
                targets, to_parent = extract.command_targets(output)
                if targets and run.parent is not None and self.active:
                    scope, source = agents.target_scope(run.parent)
                    if not to_parent:
                        graph = run.graph()
                        scope = graph.scope if graph is not None else None
                    agents.remember(scope, targets, source, f"{run.name} Command(goto)")
                run.inv.stop(extract.tool_result(output))
        finally:
            run.deactivate()

    @_guarded
    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        run = self._runs.pop(run_id, None)
        if run is None:
            return
        try:
            flow = isinstance(error, _FLOW)
            if run.inv is not None:
                if flow:
                    run.inv.stop()
                else:
                    run.inv.fail(error)
            handoff, scope = run.handoff, run.pending_in
            if handoff is not None and scope is not None and not flow:
                if scope.pending.get(run.destination or "") is handoff:
                    del scope.pending[run.destination or ""]
                handoff.transition("reject")  # the transfer itself failed: the target never ran
                handoff.fail(error)
        finally:
            run.deactivate()


def _error_code(exc: BaseException) -> str | None:
    code = getattr(exc, "code", None)
    return code if isinstance(code, str) and code else None

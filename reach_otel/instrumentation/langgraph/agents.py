"""Which nodes are agents, and the handoffs between them.

The rule (documented in the instrumentor): a node task is an ``invoke_agent`` span when its node
runs a graph of its own (a compiled subgraph, ``create_react_agent``/``create_agent``, the workers
and supervisor of langgraph-supervisor and langgraph-swarm) — at any depth — or when it calls a
chat model itself and no agent encloses it; the node metadata ``reach_otel.agent`` overrides both
(True, a name, or False). A graph root made by ``create_agent`` is itself an agent, named by it.

A node whose function refers to a chat model or a graph (read before it runs, as LangGraph reads
a node's subgraphs: :mod:`.references`) is known to be one at its first line, and its agent span
starts there, so what it does before its first model call (an MCP session, an HTTP call) nests
under it. Otherwise callbacks tell us only once the node is running (its subgraph starts, its model
is called), so the agent span is started then, dated back to the node's start; until then the node
runs under the span around it (the workflow's, or its enclosing agent's). Handoffs: a handoff tool
(``transfer_to_*`` / ``__handoff_destination``) opens the handoff span at once, under the agent that
called it; a ``Command(goto=...)`` or a supervisor's hand-back is remembered and the span opened
when its target turns out to be an agent; any other move from one agent to another within a graph
(an edge, a conditional route) is a handoff from the agent of the latest earlier superstep. The
handoff is accepted and started when its target node starts, committed (or failed) when it ends.
"""

from __future__ import annotations

import time

from opentelemetry import context as otel_context

from reach_otel.instrumentation.langgraph import extract
from reach_otel.instrumentation.langgraph.runs import Intent, Kind, Run, Scope
from reach_otel.invocations import AgentInvocation, Handoff

MODE = "takeover"  # LangGraph passes control: the target runs next, whoever runs after it


def _start_in(ctx: otel_context.Context) -> object:
    return otel_context.attach(ctx)


def start_agent(
    run: Run, name: str, start_ns: int | None = None, parent: otel_context.Context | None = None
) -> AgentInvocation | None:
    """Start ``run``'s agent span under ``parent`` (default: the span around the run); the run's
    children then nest under the agent."""
    if parent is None:
        parent = run.parent.ctx() if run.parent is not None else otel_context.get_current()
    token = _start_in(parent)
    try:
        agent = run.handler.start_agent(name, start_time=start_ns)
    finally:
        otel_context.detach(token)  # type: ignore[arg-type]
    if agent is not None:
        run.agent = agent
        run.agent_name = name
        run.own = agent.ctx
        if run.kind is Kind.NODE and agent.span.is_recording():
            agent.span.set_attributes(extract.node_attributes(run.name, run.step))
    return agent


def open_handoff(
    source: AgentInvocation, target: str, reason: str, start_ns: int | None, scope_ctx: otel_context.Context
) -> Handoff | None:
    """A handoff span under the source agent (its span may have ended: the decision was made there).

    Raises :class:`~reach_otel.HopLimitExceeded` only when the application asked for it.
    """
    token = _start_in(source.ctx if source.span.get_span_context().is_valid else scope_ctx)
    try:
        return source.handler.start_handoff(
            source.name, target, mode=MODE, reason=reason, start_time=start_ns
        )
    finally:
        otel_context.detach(token)  # type: ignore[arg-type]


def claim(node: Run, scope: Scope) -> None:
    """A node starts: a handoff a tool opened towards it is accepted and running from now."""
    handoff = scope.pending.pop(node.name, None)
    if handoff is not None:
        node.handoff = handoff
        handoff.transition("accept")
        handoff.transition("start")


def promote(node: Run) -> AgentInvocation | None:
    """Make a running node an agent: the handoff into it first (so it carries the hop), then its span."""
    if node.agent is not None or node.veto:
        return node.agent
    graph = node.home()
    scope = graph.scope if graph is not None else None
    name = node.agent_name or node.name
    if scope is not None and node.handoff is None:
        intent = scope.intents.pop(name, None)
        source: AgentInvocation | None = intent.source if intent is not None else None
        reason = intent.reason if intent is not None else "edge"
        if source is None:
            source = scope.previous_agent(node.step)
        if source is not None and source.name != name:
            start = intent.at_ns if intent is not None else node.start_ns
            handoff = open_handoff(
                source, name, reason, start, node.parent.ctx() if node.parent else node.ctx()
            )
            if handoff is not None:
                handoff.transition("accept")
                handoff.transition("start")
                node.handoff = handoff
    agent = start_agent(node, name, node.start_ns)
    if agent is not None and scope is not None:
        scope.agents.append((node.step, agent))
    return agent


def on_subgraph(graph: Run) -> AgentInvocation | None:
    """A run turned out to be a graph (its first node started): the node running it is an agent.

    A graph that a tool runs (an agent used as a tool) is an agent itself, under the tool's span.
    Returns the agent made now, if any.
    """
    run = graph.parent
    while run is not None:
        if run.kind is Kind.TOOL:
            return start_agent(graph, graph.name, graph.start_ns)
        if run.kind is Kind.NODE:
            if run.agent is None and not run.veto:
                return promote(run)
            return None
        run = run.parent
    return None


def on_model_call(run: Run) -> AgentInvocation | None:
    """A chat model is called under ``run``: its node becomes an agent, unless an agent encloses it.
    Returns the agent made now, if any."""
    node = run.node()
    if node is None or node.agent is not None or node.veto:
        return None
    if node.parent is not None and node.parent.agent_run() is not None:
        return None  # a step of an enclosing agent (the model node of a react agent, say)
    return promote(node)


def on_node_code(node: Run) -> AgentInvocation | None:
    """A node's function, about to run, refers to a chat model or a graph: it is an agent from its
    first line, as if it had called the model there (unless an agent encloses it)."""
    return on_model_call(node)


def remember(scope: Scope | None, targets: list[str], source: AgentInvocation | None, reason: str) -> None:
    """A decision to go to ``targets``: their handoff is opened if they turn out to be agents."""
    if scope is None or source is None:
        return
    now = time.time_ns()
    for target in targets:
        if target != source.name and target not in scope.pending:
            scope.intents[target] = Intent(source, reason, now)


def finish_node(node: Run, error: BaseException | None) -> None:
    """End a node's agent span and the handoff into it (committed, or failed with the node)."""
    agent = node.agent
    if agent is not None:
        if error is None:
            agent.stop()
        else:
            agent.fail(error)
    handoff, node.handoff = node.handoff, None
    if handoff is not None:
        handoff.transition("commit" if error is None else "fail")
        handoff.stop()


def close_scope(scope: Scope | None) -> None:
    """A graph run ends: handoffs whose target never started end as they are (unknown)."""
    if scope is None:
        return
    for handoff in list(scope.pending.values()):
        handoff.stop()
    scope.pending.clear()
    scope.intents.clear()


def target_scope(run: Run) -> tuple[Scope | None, AgentInvocation | None]:
    """Where a handoff tool's target lives and who hands off: the agent around the tool and its
    graph; with no agent around it, the tool's own graph and its latest agent."""
    holder = run.agent_run()
    if holder is not None and holder.kind is Kind.NODE:
        graph = holder.home()
        return (graph.scope if graph is not None else None), holder.agent
    graph = run.graph()
    scope = graph.scope if graph is not None else None
    if holder is not None:  # a root agent graph: its own nodes are its steps
        return scope, holder.agent
    return scope, scope.previous_agent(1 << 30) if scope is not None else None

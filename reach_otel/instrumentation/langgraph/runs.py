"""The run tree LangChain's callbacks describe, as far as a LangGraph run needs it.

Each callback run (graph, node task, chat model, tool, any other runnable) becomes a :class:`Run`
linked to its parent; a graph run also keeps a :class:`Scope`: the agents its nodes have run, by
superstep, and the handoffs decided towards its nodes. Plain data and tree walks, no spans.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from opentelemetry import context as otel_context

from reach_otel.handler import TelemetryHandler
from reach_otel.instrumentation.langgraph.activation import reset
from reach_otel.invocations import AgentInvocation, Handoff, Invocation


class Kind(Enum):
    ROOT = "root"  # a graph invocation: the workflow
    GRAPH = "graph"  # a graph run inside another graph's node (a subgraph)
    NODE = "node"  # one node's task in a graph
    CHAT = "chat"  # a chat model (or LLM) call
    TOOL = "tool"
    OTHER = "other"  # any other runnable: transparent


@dataclass
class Intent:
    """A handoff decided before its target runs: a ``Command(goto=...)`` or a hand-back message."""

    source: AgentInvocation
    reason: str
    at_ns: int


@dataclass
class Scope:
    """What one graph run knows about the agents among its nodes."""

    agents: list[tuple[int, AgentInvocation]] = field(default_factory=list)  # (superstep, agent), in order
    pending: dict[str, Handoff] = field(default_factory=dict)  # handoffs (tool-made) waiting for their node
    intents: dict[str, Intent] = field(default_factory=dict)  # target node → the decision
    last_step: int = 0

    def previous_agent(self, step: int) -> AgentInvocation | None:
        """The agent that ran last in an earlier superstep (several in parallel: the last to start)."""
        for agent_step, agent in reversed(self.agents):
            if agent_step < step:
                return agent
        return None


@dataclass(eq=False)
class Run:
    """One callback run; ``own`` is the context its own span made current (None: transparent)."""

    kind: Kind
    name: str
    handler: TelemetryHandler
    parent: Run | None = None
    own: otel_context.Context | None = None
    inv: Invocation | None = None
    token: object | None = None  # our attach, undone at the run's end when still on top
    attached: otel_context.Context | None = None
    # graph runs
    scope: Scope | None = None
    # node runs
    step: int = 0
    start_ns: int = 0
    agent: AgentInvocation | None = None
    agent_name: str | None = None  # the name it has as an agent (node name unless overridden)
    veto: bool = False  # marked "not an agent"
    handoff: Handoff | None = None  # the handoff into this node, open while it runs
    destination: str | None = None  # a handoff tool: the agent it transfers to
    pending_in: Scope | None = None  # a handoff tool: the scope its handoff waits in
    task: object | None = None  # a root: the asyncio task the caller awaited it in, if any

    def ctx(self) -> otel_context.Context:
        """The context this run's children start in: the nearest span at or above it."""
        run: Run | None = self
        while run is not None:
            if run.own is not None:
                return run.own
            run = run.parent
        return otel_context.get_current()

    def root(self) -> Run:
        run = self
        while run.parent is not None:
            run = run.parent
        return run

    def graph(self) -> Run | None:
        """The graph run this run is part of (itself for a graph run)."""
        run: Run | None = self
        while run is not None and run.scope is None:
            run = run.parent
        return run

    def home(self) -> Run | None:
        """The graph a node belongs to (its parent, which made a scope when the node started)."""
        return self.parent.graph() if self.parent is not None else None

    def node(self) -> Run | None:
        """The nearest node task at or above this run."""
        run: Run | None = self
        while run is not None and run.kind is not Kind.NODE:
            run = run.parent
        return run

    def agent_run(self) -> Run | None:
        """The nearest run at or above this one that is an agent (a node, or a root agent graph)."""
        run: Run | None = self
        while run is not None and run.agent is None:
            run = run.parent
        return run

    def parent_scope(self) -> Scope | None:
        """The scope of the graph around this run's graph (where ``Command.PARENT`` is meant)."""
        graph = self.graph()
        outer = graph.parent.graph() if graph is not None and graph.parent is not None else None
        return outer.scope if outer is not None else None

    # -- activation ----------------------------------------------------------------------------
    def activate(self) -> None:
        """Make this run's context current, unless it is already (the usual case for transparent runs)."""
        ctx = self.ctx()
        if otel_context.get_current() is not ctx:
            self.attached = ctx
            self.token = otel_context.attach(ctx)

    def deactivate(self) -> None:
        """Undo :meth:`activate` only when it is still on top, in the very same Context.

        A run's end may come in another Context (a stream closed elsewhere) or after a nested
        attach that was not undone; resetting then would corrupt the caller's context.
        """
        token, self.token = self.token, None
        if token is not None and otel_context.get_current() is self.attached:
            reset(token)

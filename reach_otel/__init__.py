"""reach_otel: OpenTelemetry spans for multi-agent LLM systems.

``init()`` once, then ``@workflow``, ``@agent``, ``@tool``, ``@llm``, ``handoff``, ``session``
and ``gate`` describe what the application does; ``inject``/``extract``/``attach`` carry the
trace across HTTP hops; ``evaluate``/``feedback`` record how good an answer was.
"""

__version__ = "0.1.0"

from reach_otel import context
from reach_otel.api import gate, handoff, record_usage, session
from reach_otel.decorators import agent, llm, tool, workflow
from reach_otel.errors import HopLimitExceeded
from reach_otel.evaluations import evaluate, feedback
from reach_otel.handler import TelemetryHandler, get_handler, set_handler
from reach_otel.heartbeat import heartbeat
from reach_otel.instrumentation import instrument, uninstrument
from reach_otel.lifecycle import dropped_spans, flush, init, shutdown
from reach_otel.propagation import attach, extract, inject
from reach_otel.redact import Redactor

__all__ = [
    "HopLimitExceeded",
    "Redactor",
    "TelemetryHandler",
    "__version__",
    "agent",
    "attach",
    "context",
    "dropped_spans",
    "evaluate",
    "extract",
    "feedback",
    "flush",
    "gate",
    "get_handler",
    "handoff",
    "heartbeat",
    "init",
    "inject",
    "instrument",
    "llm",
    "record_usage",
    "session",
    "set_handler",
    "shutdown",
    "tool",
    "uninstrument",
    "workflow",
]

"""Alerting: P0/P1/P2 rules with Prometheus semantics, on-call rotation, notification, replay.

Its rooms: ``rules/`` (one module per rule type), ``evaluation/`` (the evaluator, the state
machine, the engine on an injected clock, replay), ``inputs/`` (what rules read, and
``StoreAlertData``, imported on its own, over the collector's store), ``notify/`` (routing,
grouping, delivery, the wire formats) and ``oncall/`` (rotation and its config). ``config`` reads
the ``alerting`` section. Arrows point from evaluation to rules and inputs, and from the engine to
notify; nothing here imports the api or the cli.
"""

from reach_collector.alerting.config import AlertingSetup, from_settings, load_alerting
from reach_collector.alerting.evaluation.engine import AlertEngine, build_engine
from reach_collector.alerting.evaluation.history import AlertHistory, MemoryHistory
from reach_collector.alerting.evaluation.replay import parse_replay_request, replay
from reach_collector.alerting.evaluation.state import Alert, AlertState, Transition, fingerprint
from reach_collector.alerting.inputs.data import AgentWindowStats, AlertData, Heartbeat
from reach_collector.alerting.notify.webhook import HttpSender, SendOutcome
from reach_collector.alerting.oncall.rotation import next_handoff, on_call, oncall_report

__all__ = [
    "AgentWindowStats",
    "Alert",
    "AlertData",
    "AlertEngine",
    "AlertHistory",
    "AlertState",
    "AlertingSetup",
    "Heartbeat",
    "HttpSender",
    "MemoryHistory",
    "SendOutcome",
    "Transition",
    "build_engine",
    "fingerprint",
    "from_settings",
    "load_alerting",
    "next_handoff",
    "on_call",
    "oncall_report",
    "parse_replay_request",
    "replay",
]

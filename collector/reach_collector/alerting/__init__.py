"""Alerting: P0/P1/P2 rules with Prometheus semantics, on-call rotation, notification, replay.

``AlertEngine`` (engine.py) ties them together on an injected clock; ``StoreAlertData``
(store_data.py, imported on its own) answers the rules from the collector's store.
"""

from reach_collector.alerting.config import AlertingSetup, from_settings, load_alerting
from reach_collector.alerting.data import AgentWindowStats, AlertData, Heartbeat
from reach_collector.alerting.engine import AlertEngine, build_engine
from reach_collector.alerting.history import AlertHistory, MemoryHistory
from reach_collector.alerting.replay import parse_replay_request, replay
from reach_collector.alerting.rotation import next_handoff, on_call, oncall_report
from reach_collector.alerting.state import Alert, AlertState, Transition, fingerprint
from reach_collector.alerting.webhook import HttpSender, SendOutcome

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

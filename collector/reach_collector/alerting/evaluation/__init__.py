"""Evaluating the rules: one evaluation at an injected ``now`` (``evaluator``), Prometheus's state
machine (``state``), the engine that ties evaluation, history and notification together on a
clock (``engine``), replay over past data (``replay``) and where alert history goes (``history``).
"""

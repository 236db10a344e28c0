"""Alerting: P0/P1/P2 rules with Prometheus semantics, on-call rotation, notification, replay."""

"""Prometheus ``/metrics`` on the collector's own registry: ``registry.Exposition`` composes small
collectors on it — agent calls, tokens and cost (``agent_calls``), handoffs, loops and hops
(``handoff_series``, with Grafana's ``service_graph``), per-agent window gauges and heartbeats
(``agent_window``), alert state (``alert_state``), the collector's own health
(``collector_health``) and evaluations (``evaluations``) — from the spans each commit stored,
as the decoder summed them up for it (``ingest.batch_stats``). Spans that wait for another — a
handoff for its target's run (``handoff_counts``), an LLM call for its agent (``llm_owners``) —
share one pending-span helper (``pending``) whose store lookups run on one worker off the writer
thread (``lookups``).
Bounded label values and histograms: ``_prom``.
"""

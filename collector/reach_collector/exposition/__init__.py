"""Prometheus ``/metrics`` on the collector's own registry: ``registry.Exposition`` composes it from
the spans each commit stored (``batch_stats``), handoffs counted once with their outcome
(``handoff_counts``), LLM calls given to their agent (``llm_owners``), Grafana's service-graph
series (``service_graph``) and bounded label values and histograms (``_prom``).
"""

"""``reach-otel demo``: the whole product in one command — a collector, a support desk of agents
talking to a local fake LLM through the real ``openai`` client, traffic with failures, a slow
agent, a ping-pong loop and a lost heartbeat, then the trace, metrics and alerts it produced."""

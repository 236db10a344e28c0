"""A support desk instrumented by hand: @workflow, @agent, @tool, @llm, handoff, session and gate.

    reach-otel collector &                       # or any OTLP/HTTP endpoint
    python examples/decorators/app.py            # prints the trace ids; then: reach-otel trace ID

The LLM is a local fake (started here unless OPENAI_BASE_URL points at one), called with plain
httpx: a client reach_otel does not patch, so ``@reach_otel.llm`` describes the call.
"""

from __future__ import annotations

import os
from contextlib import ExitStack

import httpx
from opentelemetry import trace

import reach_otel

INVOICES = {"INV-1": 42.0, "INV-2": 99.5}


@reach_otel.llm(model="local-model", provider="local")
def ask(base_url: str, prompt: str) -> dict:
    """One chat completion; the returned JSON carries model, id, finish reason and token usage."""
    body = {"model": "local-model", "messages": [{"role": "user", "content": prompt}]}
    return httpx.post(f"{base_url}/chat/completions", json=body, timeout=10).json()


@reach_otel.tool(name="query_invoice")
def query_invoice(invoice_id: str) -> dict:
    """Look an invoice up."""
    if invoice_id not in INVOICES:
        raise KeyError(invoice_id)
    return {"invoice": invoice_id, "amount": INVOICES[invoice_id]}


@reach_otel.agent(name="BillingAgent", role="billing")
def billing(base_url: str, invoice_id: str) -> str:
    invoice = query_invoice(invoice_id)
    reply = ask(base_url, f"explain invoice {invoice['invoice']} of {invoice['amount']} EUR")
    return reply["choices"][0]["message"]["content"]


@reach_otel.agent(name="TriageAgent", role="triage")
def triage(base_url: str, question: str, invoice_id: str, steps_used: int) -> str:
    ask(base_url, f"classify: {question}")
    if steps_used >= 8:
        reach_otel.gate("max_steps", limit=8, observed=steps_used)  # reported, not a crash
    with reach_otel.handoff("TriageAgent", "BillingAgent", reason="invoice", mode="delegate") as h:
        h.transition("accept")
        h.transition("start")
        try:
            answer = billing(base_url, invoice_id)
        except KeyError:
            h.transition("fail")
            return "I could not find that invoice."
        h.transition("commit")
    return answer


@reach_otel.workflow(name="support_turn")
def turn(base_url: str, question: str, invoice_id: str, steps_used: int = 1) -> str:
    with reach_otel.session(session_id="SESS-1", user_id="U-1", task_id=f"T-{invoice_id}"):
        answer = triage(base_url, question, invoice_id, steps_used)
    print(f"{format(trace.get_current_span().get_span_context().trace_id, '032x')}  {answer}")
    return answer


def main() -> None:
    reach_otel.init(service_name="decorators-example")
    with ExitStack() as stack:
        base_url = os.environ.get("OPENAI_BASE_URL")
        if not base_url:
            from reach_otel.testing.fake_llm import FakeLLMServer

            base_url = stack.enter_context(FakeLLMServer()).openai_base_url
        turn(base_url, "where is my invoice?", "INV-1")
        turn(base_url, "and this one?", "INV-404")
        turn(base_url, "still there?", "INV-2", steps_used=8)
    reach_otel.shutdown()


if __name__ == "__main__":
    main()

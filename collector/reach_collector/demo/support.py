"""The demo's support desk: triage hands a customer to billing or tech support; instrumented by hand.

Faults are switched on per request so the traffic mix can exercise every alert: the billing
agent's refunds fail most of the time (P0), tech support is slow (P1), and triage and billing can
bounce a customer between them (a ping-pong loop that runs into the hop limit).
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass

from openai import AsyncOpenAI

import reach_otel

MODEL = "support-model"
INVOICES = {"INV-1": 42.0, "INV-2": 99.5, "INV-3": 12.25}
PING_PONG_BOUNCES = 3  # billing hands back to triage this many times: 7 handoffs, past max_hops=5


class RefundServiceError(RuntimeError):
    """The refund backend rejected the request."""


class InvoiceNotFound(LookupError):
    """No such invoice."""


@dataclass(frozen=True)
class Request:
    kind: str  # invoice | refund | outage | chitchat | pingpong
    text: str
    invoice: str = "INV-1"
    session: str = "S-1"


@reach_otel.tool(name="query_invoice")
async def query_invoice(invoice_id: str) -> dict[str, object]:
    """Look an invoice up in the billing system."""
    await asyncio.sleep(0.005)
    if invoice_id not in INVOICES:
        raise InvoiceNotFound(invoice_id)
    return {"invoice": invoice_id, "amount": INVOICES[invoice_id], "status": "paid"}


@reach_otel.tool(name="issue_refund")
async def issue_refund(invoice_id: str, rng: random.Random) -> str:
    """Ask the refund backend for a refund (it fails about 70% of the time in the demo)."""
    await asyncio.sleep(0.01)
    if rng.random() < 0.7:
        raise RefundServiceError(f"refund backend rejected {invoice_id}")
    return f"refund for {invoice_id} queued"


@reach_otel.tool(name="run_diagnostics")
async def run_diagnostics(slow_s: float) -> str:
    """Probe the customer's line (slow in the demo: tech support is the P1 agent)."""
    await asyncio.sleep(slow_s)
    return "line ok, router needs a restart"


JUDGED_WRONG = 0.5  # refund answers the demo's judge finds wrong


class SupportDesk:
    def __init__(self, llm: AsyncOpenAI, *, seed: int = 7, slow_s: float = 1.6) -> None:
        self.llm = llm
        self.rng = random.Random(seed)
        self.slow_s = slow_s

    async def _ask(self, text: str) -> str:
        reply = await self.llm.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": text}]
        )
        return reply.choices[0].message.content or ""

    @reach_otel.agent(name="BillingAgent", role="billing")
    async def billing(self, request: Request, bounces_left: int = 0) -> str:
        if request.kind == "pingpong":
            if bounces_left > 0:
                with reach_otel.handoff("BillingAgent", "TriageAgent", reason="not billing", mode="takeover"):
                    pass
                return await self.triage(request, bounces_left - 1)
            reach_otel.gate("max_bounces", limit=PING_PONG_BOUNCES, observed=PING_PONG_BOUNCES)
        invoice = await query_invoice(request.invoice)
        if request.kind == "refund":
            answer = await issue_refund(request.invoice, self.rng)
        else:
            answer = await self._ask(f"explain invoice {invoice['invoice']} of {invoice['amount']} EUR")
        self._judge(request)
        return answer

    def _judge(self, request: Request) -> None:
        """An LLM judge's verdict on the billing answer just given (on BillingAgent's span): refund
        answers name the wrong amount about half the time, though nothing raised — the quality SLO,
        not the success rate, catches that."""
        wrong = self.rng.random() < (JUDGED_WRONG if request.kind == "refund" else 0.05)
        reach_otel.evaluate(
            "correctness",
            score=0.0 if wrong else 1.0,
            label="incorrect" if wrong else "correct",
            explanation="the refund amount does not match the invoice" if wrong else "matches the invoice",
        )

    @reach_otel.agent(name="TechSupportAgent", role="tech")
    async def tech_support(self, request: Request) -> str:
        diagnosis = await run_diagnostics(self.slow_s * (0.8 + 0.4 * self.rng.random()))
        return await self._ask(f"tell the customer: {diagnosis}")

    @reach_otel.agent(name="TriageAgent", role="triage")
    async def triage(self, request: Request, bounces_left: int = 0) -> str:
        await self._ask(f"classify: {request.text}")
        target = "TechSupportAgent" if request.kind == "outage" else "BillingAgent"
        if request.kind == "chitchat":
            return await self._ask(request.text)
        with reach_otel.handoff("TriageAgent", target, reason=request.kind, mode="delegate") as h:
            h.transition("accept")
            h.transition("start")
            try:
                if target == "BillingAgent":
                    answer = await self.billing(request, bounces_left)
                else:
                    answer = await self.tech_support(request)
            except Exception:
                h.transition("fail")
                raise
            h.transition("commit")
        return answer

    @reach_otel.workflow(name="support_turn")
    async def turn(self, request: Request) -> str:
        with reach_otel.session(session_id=request.session, task_id=f"T-{request.kind}"):
            bounces = PING_PONG_BOUNCES if request.kind == "pingpong" else 0
            return await self.triage(request, bounces)

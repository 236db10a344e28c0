"""The support desk's tools. Transfer tools raise HandoffSignal to switch agents."""

from __future__ import annotations

import json

from support_agents import HandoffSignal

INVOICES = {"INV-1": {"amount": 42.0, "status": "paid"}, "INV-2": {"amount": 99.5, "status": "overdue"}}


def lookup_invoice(query: str) -> str:
    """Find an invoice mentioned in the question."""
    for invoice_id, invoice in INVOICES.items():
        if invoice_id in query:
            return json.dumps({"invoice": invoice_id, **invoice})
    return json.dumps({"error": "no invoice found"})


def reset_router(query: str) -> str:
    """Walk the customer through a router reset."""
    return "unplug the router, wait 30 seconds, plug it back in"


def transfer_to_billing(query: str) -> str:
    """Hand the conversation to the billing agent."""
    raise HandoffSignal("BillingAgent")


def transfer_to_tech_support(query: str) -> str:
    """Hand the conversation to technical support."""
    raise HandoffSignal("TechSupportAgent")


def transfer_to_triage(query: str) -> str:
    """Hand the conversation back to triage."""
    raise HandoffSignal("TriageAgent")

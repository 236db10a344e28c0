"""The support desk's tools as an MCP server (``MCPServer``, formerly FastMCP): stdio or streamable HTTP.

    python examples/mcp_tools/server.py                  # stdio (an MCP client starts it)
    python examples/mcp_tools/server.py --http 8765      # streamable HTTP on 127.0.0.1:8765/mcp

``reach_otel.init()`` is the only tracing line (and harmless under ``reach-otel run``, which does
the same): each tool call is a ``tools/call NAME`` SERVER span in the caller's trace.
"""

from __future__ import annotations

import argparse
import os

from mcp.server.mcpserver import MCPServer

import reach_otel

INVOICES = {"INV-7": "42 EUR, paid on 3 March", "INV-8": "17 EUR, open"}
REFUNDS = {"INV-7": "approved, 42 EUR back within 5 days"}

tools = MCPServer("support-tools")


def _invoice_id(query: str) -> str:
    return next((word.strip(".,?") for word in query.split() if word.startswith("INV-")), "")


@tools.tool()
def lookup_invoice(query: str) -> str:
    """Look up an invoice named in the query (INV-...)."""
    invoice = _invoice_id(query)
    if invoice not in INVOICES:
        raise ValueError(f"no invoice in {query!r}")
    return f"invoice {invoice}: {INVOICES[invoice]}"


@tools.tool()
def refund_status(query: str) -> str:
    """The state of the refund of the invoice named in the query."""
    invoice = _invoice_id(query)
    return f"refund for {invoice}: {REFUNDS.get(invoice, 'none requested')}"


def main() -> None:
    parser = argparse.ArgumentParser(description="the support tools as an MCP server")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on this port")
    args = parser.parse_args()
    os.environ.setdefault("OTEL_SERVICE_NAME", "support-tools")
    reach_otel.init()
    if args.http is None:
        tools.run("stdio")
        return
    import uvicorn

    uvicorn.run(tools.streamable_http_app(), host="127.0.0.1", port=args.http, log_level="warning")


if __name__ == "__main__":
    main()

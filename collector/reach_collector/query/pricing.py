"""What tokens cost: the collector's ``prices`` table (model → USD per 1M input and output tokens),
the one place the API, the topology, the budget rules and ``/metrics`` price a model's tokens.
A model the table does not name has no price: its cost is unknown (None), never 0."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["PriceTable", "Prices"]

Prices = Mapping[str, Mapping[str, float]]  # as the config file writes it: {model: {input, output}}


class PriceTable:
    """The ``prices`` table read once into (input, output) USD per 1M tokens by model."""

    def __init__(self, prices: Prices | None) -> None:
        self._per_million = {
            str(m): (float(p.get("input", 0.0)), float(p.get("output", 0.0)))
            for m, p in (prices or {}).items()
        }

    def usd(self, model: str | None, input_tokens: int, output_tokens: int) -> float | None:
        """USD for these tokens of ``model``; None for a model not in the table."""
        price = self._per_million.get(model) if model is not None else None
        if price is None:
            return None
        return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000

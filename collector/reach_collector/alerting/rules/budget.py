"""The budget rule (``type: budget``, SPEC §15): LLM cost (``limit_usd``) or tokens
(``limit_tokens``) per agent, per ``user.id`` or per ``gen_ai.conversation.id``
(``per: agent|user|conversation``) over a rolling ``window`` (default 1d).

One config makes two rules: ``<name>`` fires when a key has spent its limit in the window
(severity P1 by default; per agent it pages the agent's owner); ``<name>Projected`` warns (severity
``warning``: no route, so nobody is paged, and no P2 deregistration) when the linear projection
crosses the limit before the window ends. The projection: the key's spend began at its first LLM
span in the window (``start``); at the rate since then, the window that began there ends with
``spent × window / (now − start)``. It needs ``min_elapsed`` (default window / 24) of history, so
one early call does not project to infinity. An LLM span counts for the agent named on it
(``reach.agent.name``); a key whose cost is unknown (a model not in ``prices``) is not judged on cost.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Protocol

from reach_collector.alerting.evaluation.state import Sample, iso
from reach_collector.sections.rules import WARNING, BudgetRuleConfig
from reach_collector.text.durations import format_duration_s

__all__ = ["WARNING", "BudgetData", "BudgetRule", "BudgetRuleConfig", "budget_rules"]

_NS: Final = 1e9


class BudgetData(Protocol):
    """Per key: (USD or None when unpriced, tokens, first LLM span's end in unix ns) in the window."""

    def spend(self, now: float, window_s: float, per: str) -> Mapping[str, tuple[float | None, int, int]]: ...


def _money(value: float, tokens: bool) -> str:
    return f"{value:,.0f} tokens" if tokens else f"${value:,.2f}"


class BudgetRule:
    """``projected=False``: the limit is spent; ``True``: the projection crosses it (warning)."""

    def __init__(self, config: BudgetRuleConfig, projected: bool = False) -> None:
        self.config = config
        self.projected = projected
        self.name = f"{config.name}Projected" if projected else config.name
        self.severity = config.warn_severity if projected else config.severity
        self.for_s = config.for_s
        self.keep_firing_for_s = config.keep_firing_for_s
        self.window_s = config.window_s
        # The spent alert of an agent's budget pages its owner; a warning goes by its severity's
        # route (``warning`` has none), never to an owner.
        self.owner_label: str | None = "agent" if config.per == "agent" and not projected else None
        self._label = {"agent": "agent", "user": "user", "conversation": "conversation"}[config.per]

    @property
    def generator_path(self) -> str:
        return f"/api/topology?window={format_duration_s(min(self.window_s, 7 * 86400))}"

    def trace_search(self, labels: Mapping[str, str], active_at: float) -> dict[str, str] | None:
        since = iso(active_at - self.window_s) or ""
        if self.config.per == "agent" and labels.get("agent"):
            return {"agent": labels["agent"], "since": since}
        if self.config.per == "conversation" and labels.get("conversation"):
            return {"attr.gen_ai.conversation.id": labels["conversation"], "since": since}
        if self.config.per == "user" and labels.get("user"):
            return {"attr.user.id": labels["user"], "since": since}
        return None

    def samples(self, now: float, data: Any) -> list[Sample]:
        c = self.config
        by_tokens = c.limit_tokens is not None
        limit = float(c.limit_tokens) if c.limit_tokens is not None else float(c.limit_usd or 0.0)
        min_elapsed = c.min_elapsed_s if c.min_elapsed_s is not None else c.window_s / 24
        out = []
        for key, (usd, tokens, first_ns) in sorted(data.spend(now, c.window_s, c.per).items()):
            spent = float(tokens) if by_tokens else usd
            if spent is None:
                continue  # an unpriced model: its cost is unknown, so is whether it is over
            elapsed = min(c.window_s, max(now - first_ns / _NS, 0.0))
            projection = spent * c.window_s / elapsed if elapsed > 0 else float("inf")
            window = format_duration_s(c.window_s)
            annotations = {
                "spent": f"{spent:.6g}",
                "limit": f"{limit:g}",
                "projected": f"{projection:.6g}",
                "window": window,
            }
            if not self.projected and spent >= limit:
                shown = f"{_money(spent, by_tokens)} of {_money(limit, by_tokens)}"
                summary = f"{self._label} {key}: spent {shown} in {window}"
                out.append(
                    Sample(
                        {self._label: key},
                        spent,
                        {"summary": summary, "value": f"{spent:.6g}", **annotations},
                    )
                )
            elif self.projected and spent < limit and elapsed >= min_elapsed and projection >= limit:
                summary = (
                    f"{self._label} {key}: on course for {_money(projection, by_tokens)} in {window} "
                    f"(limit {_money(limit, by_tokens)}; {_money(spent, by_tokens)} spent so far)"
                )
                out.append(
                    Sample(
                        {self._label: key},
                        projection,
                        {"summary": summary, "value": f"{projection:.6g}", **annotations},
                    )
                )
        return out


def budget_rules(config: BudgetRuleConfig) -> list[BudgetRule]:
    """The rules of one budget: spent, and (unless ``warn: false``) projected."""
    return [BudgetRule(config), *([BudgetRule(config, projected=True)] if config.warn else [])]

"""Alert history in the store: the ``AlertHistory`` sink (transitions, delivery attempts, acks) and
the reads that outlive a restart — past episodes for ``GET /api/alerts`` and the alerts to restore.

Writes are handed to the ingest writer's thread (``run``, e.g. ``Writer.call``) so DuckDB keeps one
writer; they are fire-and-forget for the alert loop, and a failure is logged, never raised.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, Final

from reach_collector.alerting.evaluation.history import Acknowledgement
from reach_collector.alerting.evaluation.state import Alert, AlertState, Transition, iso
from reach_collector.alerting.notify.delivery import DeliveryAttempt
from reach_collector.store.alert_tables import last_transitions
from reach_collector.store.base import TraceStore

__all__ = ["StoreHistory"]

log = logging.getLogger("reach_collector.alerting")

_NS: Final = 1_000_000_000
Run = Callable[[Callable[[Any], Any]], "Future[Any]"]


def _ns(t: float | None) -> int | None:
    return None if t is None else round(t * _NS)


def _s(ns: int | None) -> float | None:
    return None if ns is None else int(ns) / _NS


class StoreHistory:
    """``AlertHistory`` over the store's ``alert_*`` tables (schema.AUX_TABLES)."""

    def __init__(self, store: TraceStore, run: Run | None = None) -> None:
        self._store = store
        self._run = run

    # --- the AlertHistory protocol (the alert loop's thread) ------------------------------------
    def record_transition(self, t: Transition) -> None:
        row = (
            _ns(t.time),
            t.alertname,
            t.severity,
            t.fingerprint,
            json.dumps(dict(t.labels), sort_keys=True),
            t.from_state.value,
            t.to_state.value,
            float(t.value),
            json.dumps(dict(t.annotations), sort_keys=True),
            _ns(t.active_at),
            _ns(t.fired_at),
            _ns(t.resolved_at),
        )
        self._append("alert_transitions", row)

    def record_delivery(self, a: DeliveryAttempt) -> None:
        row = (
            _ns(a.time),
            a.delivery_id,
            a.kind,
            a.fingerprint,
            a.alertname,
            a.recipient,
            a.url,
            a.attempt,
            a.ok,
            a.retryable,
            a.error,
            _ns(a.next_retry_at),
        )
        self._append("alert_deliveries", row)

    def record_ack(self, ack: Acknowledgement) -> None:
        self._append("alert_acks", (ack.fingerprint, ack.by, _ns(ack.time), _ns(ack.fired_at)))

    def _append(self, table: str, row: Sequence[Any]) -> None:
        def task(_: Any) -> None:  # on the writer's thread; always this store (the writer may wrap it)
            self._store.append(table, [row])

        try:
            if self._run is None:
                task(self._store)
                return
            self._run(task).add_done_callback(_log_failure(table))
        except Exception as exc:  # history must never stop evaluation or notification
            log.warning("alert history: could not record a %s row: %s", table, exc)

    # --- reads (any thread) ---------------------------------------------------------------------
    # The history is small (retention prunes it), so its reads fetch the rows plainly and reduce
    # them here: one definition for every store, with no window functions (SPEC §16).
    def _acks(self) -> dict[tuple[str, Any], str]:
        """(fingerprint, fired_at_ns) → who acknowledged that firing last."""
        latest: dict[tuple[str, Any], tuple[int, str]] = {}
        for fp, by, time_ns, fired in self._store.query(
            "SELECT fingerprint, acked_by, time_ns, fired_at_ns FROM alert_acks"
        ):
            key = (fp, fired)
            if key not in latest or int(time_ns) >= latest[key][0]:
                latest[key] = (int(time_ns), by)
        return {key: by for key, (_, by) in latest.items()}

    def episodes(self, state: str | None = None, limit: int = 1000) -> list[dict[str, Any]]:
        """Persisted alert episodes in the ``GET /api/alerts`` element shape, newest first;
        dropped pending episodes (last state inactive) are left out."""
        acks = self._acks()
        rows = [
            r
            for r in last_transitions(self._store)
            if (r[5] == state if state is not None else r[5] != "inactive")
        ]
        return [
            {
                "fingerprint": fp,
                "alertname": name,
                "severity": sev,
                "labels": json.loads(labels),
                "annotations": json.loads(annotations),
                "state": to_state,
                "value": value,
                "active_at": iso(_s(active)),
                "fired_at": iso(_s(fired)),
                "resolved_at": iso(_s(resolved)),
                "acknowledged_by": acks.get((fp, fired)),
            }
            for fp, name, sev, labels, annotations, to_state, value, active, fired, resolved, _ in (
                rows[:limit]
            )
        ]

    def active(self) -> tuple[list[Alert], dict[tuple[str, float | None], str]]:
        """What was pending or firing when the collector stopped, and the acks of those episodes
        (``(fingerprint, fired_at) → by``): the state a restarted engine picks up again."""
        newest: dict[str, tuple[Any, ...]] = {}
        for row in last_transitions(self._store):  # newest first: the first open episode of a fingerprint
            if row[5] in ("pending", "firing"):
                newest.setdefault(row[0], row)
        alerts = [
            Alert(
                alertname=name,
                severity=sev,
                labels=json.loads(labels),
                fingerprint=fp,
                state=AlertState(to_state),
                active_at=int(active) / _NS,
                value=float(value),
                annotations=json.loads(annotations),
                fired_at=_s(fired),
                last_evaluated=int(time_ns) / _NS,
            )
            for fp, name, sev, labels, annotations, to_state, value, active, fired, _, time_ns in (
                newest.values()
            )
        ]
        return alerts, {(fp, _s(fired)): by for (fp, fired), by in self._acks().items()}

    def deliveries(
        self, fingerprint: str | None = None, limit: int = 1000, *, failed: bool = False
    ) -> list[dict[str, Any]]:
        """The last ``limit`` delivery attempts, oldest first (optionally of one alert, or only the
        failed ones). A grouped message names its alerts' fingerprints comma-separated; each row
        lists them in ``fingerprints``, and ``agent`` is the agent they share (else null)."""
        conditions: list[str] = []
        params: list[Any] = []
        if fingerprint:
            if _HEX16.fullmatch(fingerprint):  # 16 hex digits: a substring match is a member match
                conditions.append("fingerprint LIKE ?")
                params.append(f"%{fingerprint}%")
            else:
                conditions.append("fingerprint = ?")
                params.append(fingerprint)
        if failed:
            conditions.append("NOT ok")
        where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
        rows = self._store.query(
            "SELECT time_ns, kind, fingerprint, alertname, recipient, url, attempt, ok, retryable, error, "
            f"next_retry_at_ns, delivery_id FROM alert_deliveries {where} "
            "ORDER BY time_ns DESC, delivery_id DESC, attempt DESC LIMIT ?",
            [*params, limit],
        )
        rows.reverse()
        # The agent comes from the alert's labels (a delivery row names only the fingerprint).
        agents: dict[str, Any] = {}
        if rows:
            fps = sorted({fp for r in rows for fp in str(r[2]).split(",")})
            for fp, labels in self._store.query(
                "SELECT fingerprint, argMax(labels, time_ns) FROM alert_transitions "
                f"WHERE fingerprint IN ({', '.join('?' * len(fps))}) GROUP BY fingerprint",
                fps,
            ):
                agent = json.loads(labels).get("agent") if labels else None
                agents[fp] = agent if isinstance(agent, str) else None
        keys = ("time", "kind", "fingerprint", "alertname", "recipient", "url", "attempt")
        return [
            {
                **dict(zip(keys, (iso(_s(r[0])), *r[1:7]), strict=True)),
                "ok": bool(r[7]),
                "retryable": None if r[8] is None else bool(r[8]),
                "error": r[9],
                "next_retry_at": iso(_s(r[10])),
                "delivery_id": r[11],
                "fingerprints": str(r[2]).split(","),
                "agent": _shared({agents.get(fp) for fp in str(r[2]).split(",")}),
            }
            for r in rows
        ]


_HEX16: Final = re.compile(r"[0-9a-f]{16}")


def _shared(agents: set[Any]) -> Any:
    return agents.pop() if len(agents) == 1 else None


def _log_failure(table: str) -> Callable[[Future[Any]], None]:
    def done(future: Future[Any]) -> None:
        exc = future.exception()
        if exc is not None:
            log.warning("alert history: could not record a %s row: %s", table, exc)

    return done

"""``StoreUnavailable``: the store cannot be reached right now (a ClickHouse outage, a shard
down). Reads that raise it are answered 503 with ``Retry-After``; writes already are."""

from __future__ import annotations

__all__ = ["StoreUnavailable"]


class StoreUnavailable(Exception):
    """The store is unreachable for now; retry after ``retry_after`` seconds. The message says
    where and why, never with a password."""

    def __init__(self, message: str, retry_after: int = 2) -> None:
        super().__init__(message)
        self.retry_after = retry_after

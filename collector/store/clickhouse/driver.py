"""The connection to a ClickHouse server through clickhouse-driver (the native protocol, what
18.16 and current releases both speak): one client per thread, errors told apart into "the
server is unreachable or overloaded now" (``StoreUnavailable``) and the rest, and no password in
any message.

The driver reconnects by itself: after a network error it drops the socket, and the next call
opens a new one. A backend is also what the store needs from chdb (``chdb_backend``).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator, Sequence
from typing import Any, Final, Protocol

from reach_collector.store.clickhouse.url import ClickHouseURL
from reach_collector.store.unavailable import StoreUnavailable

__all__ = ["Backend", "DriverBackend", "transient"]

# The driver logs each failed connection with a traceback; the store reports failures itself (one
# line, as StoreUnavailable), so without a handler of the application's they go nowhere.
logging.getLogger("clickhouse_driver").addHandler(logging.NullHandler())

CONNECT_TIMEOUT_S: Final = 5.0
# A query or an insert that has not answered in this long fails (503); ingest batches are ≤ 64k
# rows, which 18.16 takes in well under a second here.
SEND_RECEIVE_TIMEOUT_S: Final = 60.0
# Server error codes that mean "not now": the caller answers 503 and the request is retried.
TRANSIENT_CODES: Final = frozenset(
    {
        3,  # UNEXPECTED_END_OF_FILE
        32,  # ATTEMPT_TO_READ_AFTER_EOF
        159,  # TIMEOUT_EXCEEDED
        164,  # READONLY (a server started read-only)
        202,  # TOO_MANY_SIMULTANEOUS_QUERIES
        209,  # SOCKET_TIMEOUT
        210,  # NETWORK_ERROR (also a Distributed table's shard that refused the connection)
        241,  # MEMORY_LIMIT_EXCEEDED
        242,  # TABLE_IS_READ_ONLY
        252,  # TOO_MANY_PARTS
        279,  # ALL_CONNECTION_TRIES_FAILED (a shard down)
        319,  # UNKNOWN_STATUS_OF_INSERT
        394,  # QUERY_WAS_CANCELLED (the server is shutting down)
    }
)


class Backend(Protocol):
    """What the store runs statements through."""

    where: str  # for messages: the server (or directory), never with a password

    def execute(self, sql: str, settings: dict[str, Any] | None = None) -> list[tuple[Any, ...]]: ...

    def insert(
        self,
        table: str,
        columns: Sequence[str],
        data: list[list[Any]],
        types: Sequence[str],
        settings: dict[str, Any] | None = None,
    ) -> None:
        """Insert column lists (``types`` are the ClickHouse types, in ``columns`` order)."""
        ...

    def close(self) -> None: ...


def transient(exc: BaseException) -> bool:
    """The server could not be reached, or refused for now (an outage, overload, a shard down)."""
    from clickhouse_driver import errors

    if isinstance(exc, errors.ServerException):
        return exc.code in TRANSIENT_CODES
    if isinstance(
        exc, (errors.NetworkError, errors.SocketTimeoutError, errors.UnexpectedPacketFromServerError)
    ):
        return True
    if isinstance(exc, errors.Error):
        return getattr(exc, "code", None) in TRANSIENT_CODES
    return isinstance(exc, (OSError, EOFError))


def _short(exc: BaseException, password: str) -> str:
    """A driver error on one line, without the server's stack trace, the password cut out."""
    text = " ".join(str(exc).split("Stack trace:")[0].split()) or type(exc).__name__
    return text.replace(password, "***") if password else text


class DriverBackend:
    """Statements on one server (``host``/``port``, the URL's by default), in ``database``."""

    def __init__(
        self,
        url: ClickHouseURL,
        *,
        host: str | None = None,
        port: int | None = None,
        database: str | None = None,
    ) -> None:
        self._url = url
        self._host = host or url.host
        self._port = port or url.port
        self._database = database or url.database
        self.where = f"ClickHouse at {self._host}:{self._port}"
        self._local = threading.local()
        self._clients: list[Any] = []
        self._lock = threading.Lock()
        self._closed = False

    def _client(self) -> Any:
        client = getattr(self._local, "client", None)
        if client is None:
            from clickhouse_driver import Client

            client = Client(
                self._host,
                port=self._port,
                database=self._database,
                user=self._url.user,
                password=self._url.password,
                connect_timeout=CONNECT_TIMEOUT_S,
                send_receive_timeout=SEND_RECEIVE_TIMEOUT_S,
                sync_request_timeout=CONNECT_TIMEOUT_S,
                client_name="reach-collector",
            )
            self._local.client = client
            with self._lock:
                self._clients.append(client)
        return client

    @contextlib.contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        try:
            yield
        except StoreUnavailable:
            raise
        except Exception as exc:
            message = f"{self.where}: {what} failed: {_short(exc, self._url.password)}"
            if transient(exc):
                raise StoreUnavailable(message) from None
            raise StoreError(message, getattr(exc, "code", None)) from None

    def execute(self, sql: str, settings: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        if self._closed:
            raise StoreUnavailable(f"{self.where}: the store is closed")
        with self._errors("a query"):
            rows = self._client().execute(sql, settings=settings)
        return list(rows) if isinstance(rows, list) else []

    def insert(
        self,
        table: str,
        columns: Sequence[str],
        data: list[list[Any]],
        types: Sequence[str],
        settings: dict[str, Any] | None = None,
    ) -> None:
        if self._closed:
            raise StoreUnavailable(f"{self.where}: the store is closed")
        with self._errors(f"an insert into {table}"):
            self._client().execute(
                f"INSERT INTO {table} ({', '.join(columns)}) VALUES", data, columnar=True, settings=settings
            )

    def close(self) -> None:
        self._closed = True
        with self._lock:
            clients, self._clients = self._clients, []
        for client in clients:
            with contextlib.suppress(Exception):
                client.disconnect()


class StoreError(RuntimeError):
    """ClickHouse refused a statement for a reason that retrying will not change (bad SQL, a
    missing table, wrong credentials); ``code`` is its error code when it sent one."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code

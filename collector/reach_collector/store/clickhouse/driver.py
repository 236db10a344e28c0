"""The connection to a ClickHouse server through clickhouse-driver (the native protocol, what
18.16 and current releases both speak): one client per thread, errors told apart into "the
server is unreachable or overloaded now" (``StoreUnavailable``) and the rest, and no password in
any message.

The driver reconnects by itself: after a network error it drops the socket, and the next call
opens a new one. A backend is also what the store needs from chdb (``chdb_backend``).

Span inserts go as a ``native.NativeBlock``, columns already in the wire format: the driver runs
the insert (connection, query, the server's header, the acknowledgement, errors) and writes the
block's bytes where it would have built them from Python lists.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator, Sequence
from typing import Any, Final, Protocol

from reach_collector.store.clickhouse.native import NativeBlock
from reach_collector.store.unavailable import StoreUnavailable
from reach_collector.text.clickhouse_url import ClickHouseURL

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
            client = _native_client_class()(
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

    def insert_block(self, table: str, block: NativeBlock, settings: dict[str, Any] | None = None) -> None:
        """Insert a block already in the Native format (``native.span_block``)."""
        if self._closed:
            raise StoreUnavailable(f"{self.where}: the store is closed")
        names = ", ".join(name for name, _, _ in block.columns)
        with self._errors(f"an insert into {table}"):
            self._client().execute(f"INSERT INTO {table} ({names}) VALUES", block, settings=settings)

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


_CLIENT_CLASS: type | None = None


def _native_client_class() -> type:
    """clickhouse-driver's Client, taking a ``NativeBlock`` as an insert's data as well as lists
    (made on first use: the driver is an optional dependency)."""
    global _CLIENT_CLASS
    if _CLIENT_CLASS is None:
        from clickhouse_driver import Client

        class NativeClient(Client):  # type: ignore[misc]
            def send_data(
                self, sample_block: Any, data: Any, types_check: bool = False, columnar: bool = False
            ) -> int:
                if isinstance(data, NativeBlock):
                    return _send_native(self, sample_block, data)
                return int(super().send_data(sample_block, data, types_check=types_check, columnar=columnar))

        _CLIENT_CLASS = NativeClient
    return _CLIENT_CLASS


def _send_native(client: Any, sample_block: Any, block: NativeBlock) -> int:
    """What ``Client.send_data`` does for one block (a Data packet, then the empty block that ends
    the data), with the block's columns written as they are. The server's header for the insert
    (``sample_block``) must name the same columns with the same types: bytes of another type
    would be read as garbage, so a schema this collector does not know is refused instead."""
    from clickhouse_driver import defines
    from clickhouse_driver.block import BlockInfo, ColumnOrientedBlock
    from clickhouse_driver.protocol import ClientPacketTypes
    from clickhouse_driver.varint import write_varint
    from clickhouse_driver.writer import write_binary_str, write_binary_uint8

    expected = [(name, kind) for name, kind, _ in block.columns]
    if [tuple(c) for c in sample_block.columns_with_types] != expected:
        raise StoreError(
            f"the server's columns {sample_block.columns_with_types} are not the ones this collector "
            f"writes {expected}: is another version's schema in this database?"
        )
    connection = client.connection
    if connection.compression:  # never set by DriverBackend: compressed blocks would need framing
        raise StoreError("a compressed connection cannot take a prepared block")
    revision = connection.server_info.used_revision
    fout = connection.fout
    write_varint(ClientPacketTypes.DATA, fout)
    if revision >= defines.DBMS_MIN_REVISION_WITH_TEMPORARY_TABLES:
        write_binary_str("", fout)
    if revision >= defines.DBMS_MIN_REVISION_WITH_BLOCK_INFO:
        BlockInfo().write(fout)
    write_varint(len(block.columns), fout)
    write_varint(block.rows, fout)
    custom = getattr(defines, "DBMS_MIN_REVISION_WITH_CUSTOM_SERIALIZATION", None)
    for name, kind, data in block.columns:
        write_binary_str(name, fout)
        write_binary_str(kind, fout)
        if custom is not None and revision >= custom:
            write_binary_uint8(0, fout)  # no custom serialization, as the driver writes
        fout.write(data)
    fout.flush()
    profile_events = getattr(client, "receive_profile_events", None)
    if profile_events is not None:
        profile_events()
    connection.send_data(ColumnOrientedBlock())  # an empty block ends the data
    if profile_events is not None:
        profile_events()
    return int(block.rows)

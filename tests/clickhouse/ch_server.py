"""Real ClickHouse servers for tests: Debian's ``clickhouse-server`` (installed when missing, as the
dashboards tests install Prometheus), started in the foreground with a config of its own in a
temporary directory, on free loopback ports — one node, or a cluster of shards on loopback that
know each other through ``remote_servers`` (no ZooKeeper). Always stopped by whoever started them.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from collector_process import free_port
from debian_packages import ensure_installed

PACKAGES = ("clickhouse-server", "clickhouse-client")
SERVER_BINARY = "clickhouse-server"
# A user with a password beside the passwordless `default`: for the tests that check a password
# never shows. Test-only; the servers listen on 127.0.0.1 only.
PASSWORD_USER = "reach"
TEST_PASSWORD = "pw-3f1c9a7e-never-print-me"
CLUSTER = "reach_test"


def _find() -> str | None:
    return shutil.which(SERVER_BINARY) or shutil.which(SERVER_BINARY, path="/usr/sbin:/usr/bin")


def ensure_clickhouse_server() -> str:
    """The server binary, installing Debian's packages first when it is missing and we are root;
    under CI=true a server that cannot be had fails the test, elsewhere it skips."""
    return ensure_installed(SERVER_BINARY, _find, PACKAGES, timeout=900)


def _remote_servers(cluster: str, shards: Sequence[int]) -> str:
    body = "".join(
        f"<shard><replica><host>127.0.0.1</host><port>{port}</port></replica></shard>" for port in shards
    )
    return f"<remote_servers><{cluster}>{body}</{cluster}></remote_servers>"


def _config(directory: Path, tcp_port: int, http_port: int, remote_servers: str) -> str:
    d = escape(str(directory))
    return f"""<?xml version="1.0"?>
<yandex>
    <logger>
        <level>warning</level>
        <log>{d}/log/server.log</log>
        <errorlog>{d}/log/server.err.log</errorlog>
        <size>100M</size>
        <count>1</count>
    </logger>
    <listen_host>127.0.0.1</listen_host>
    <tcp_port>{tcp_port}</tcp_port>
    <http_port>{http_port}</http_port>
    <path>{d}/data/</path>
    <tmp_path>{d}/tmp/</tmp_path>
    <user_files_path>{d}/user_files/</user_files_path>
    <format_schema_path>{d}/format_schemas/</format_schema_path>
    <users_config>{d}/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <max_concurrent_queries>100</max_concurrent_queries>
    <mark_cache_size>268435456</mark_cache_size>
    <uncompressed_cache_size>268435456</uncompressed_cache_size>
    <mlock_executable>false</mlock_executable>
    {remote_servers}
</yandex>
"""


_USERS = f"""<?xml version="1.0"?>
<yandex>
    <profiles><default></default></profiles>
    <users>
        <default>
            <password></password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
        <{PASSWORD_USER}>
            <password>{TEST_PASSWORD}</password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile>
            <quota>default</quota>
        </{PASSWORD_USER}>
    </users>
    <quotas><default></default></quotas>
</yandex>
"""


@dataclass
class ClickHouseServer:
    """One foreground clickhouse-server process. ``stop``/``kill`` and ``start`` again keep its
    ports and its data (the outage tests restart it in place)."""

    binary: str
    directory: Path
    tcp_port: int = field(default_factory=free_port)
    http_port: int = field(default_factory=free_port)
    remote_servers: str = ""
    proc: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        for sub in ("log", "data", "tmp", "user_files", "format_schemas"):
            (self.directory / sub).mkdir(parents=True, exist_ok=True)
        (self.directory / "users.xml").write_text(_USERS, encoding="utf-8")
        self.config = self.directory / "config.xml"
        self.config.write_text(
            _config(self.directory, self.tcp_port, self.http_port, self.remote_servers), encoding="utf-8"
        )

    @property
    def host(self) -> str:
        return "127.0.0.1"

    def url(self, database: str, *, cluster: str | None = None, user: str | None = None) -> str:
        """The collector's ``--db`` for this server (no password in it: pass that in the
        environment as REACH_CLICKHOUSE_PASSWORD)."""
        who = f"{user}@" if user else ""
        tail = f"?cluster={cluster}" if cluster else ""
        return f"clickhouse://{who}{self.host}:{self.tcp_port}/{database}{tail}"

    def start(self, timeout: float = 60.0) -> ClickHouseServer:
        if self.running:
            return self
        out = (self.directory / "log" / "stdout.log").open("ab")
        try:
            self.proc = subprocess.Popen(
                [self.binary, f"--config-file={self.config}"],
                cwd=self.directory,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a Ctrl-C in the test run does not reach it first
            )
        finally:
            out.close()
        deadline = time.monotonic() + timeout
        while not self.ping():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                log = self.log_tail()
                self.kill()
                raise RuntimeError(f"clickhouse-server did not start on {self.tcp_port}: {log}")
            time.sleep(0.05)
        return self

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ping(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://{self.host}:{self.http_port}/ping", timeout=1) as r:
                return bool(r.status == 200 and r.read().strip() == b"Ok.")
        except OSError:
            return False

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM, then SIGKILL if it has not exited within ``timeout``."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None

    def kill(self) -> None:
        """SIGKILL: an outage with no goodbye (the data written so far stays on disk)."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None

    def log_tail(self, chars: int = 2000) -> str:
        parts = []
        for name in ("stdout.log", "server.err.log"):
            path = self.directory / "log" / name
            if path.exists():
                parts.append(path.read_text(errors="replace")[-chars:])
        return "\n".join(parts)

    def client(self, database: str = "default", **kwargs: Any) -> Any:
        """A clickhouse-driver client on this server (the caller disconnects it)."""
        from clickhouse_driver import Client

        return Client(self.host, port=self.tcp_port, database=database, **kwargs)

    def execute(self, sql: str, params: Any = None, database: str = "default") -> Any:
        """One statement on a fresh connection: rows for a SELECT, the row count for an INSERT."""
        client = self.client(database)
        try:
            return client.execute(sql, params)
        finally:
            client.disconnect()


def start_server(binary: str, directory: Path) -> ClickHouseServer:
    """One node (the caller stops it)."""
    return ClickHouseServer(binary, directory).start()


def start_cluster(
    binary: str, directory: Path, shards: int = 2, cluster: str = CLUSTER
) -> list[ClickHouseServer]:
    """``shards`` servers on loopback, each with one replica, all listing the same cluster ``cluster``
    in ``remote_servers``. Returns them started (the caller stops them: ``stop_all``)."""
    ports = [(free_port(), free_port()) for _ in range(shards)]
    remote = _remote_servers(cluster, [tcp for tcp, _ in ports])
    servers = [
        ClickHouseServer(binary, directory / f"shard{i + 1}", tcp, http, remote)
        for i, (tcp, http) in enumerate(ports)
    ]
    try:
        for server in servers:
            server.start()
    except BaseException:
        stop_all(servers)
        raise
    return servers


def stop_all(servers: Sequence[ClickHouseServer]) -> None:
    for server in servers:
        if server.running and server.proc is not None:
            server.proc.send_signal(signal.SIGTERM)  # all at once: each takes seconds to stop
    for server in servers:
        server.stop()

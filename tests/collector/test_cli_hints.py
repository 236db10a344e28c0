"""What the CLI says when the collector is slow rather than down, and when it lists no agents."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from reach_collector.cli.agents import NO_HEARTBEATS
from reach_collector.cli.client import QueryError, get_json, post_json


@pytest.fixture
def silent_server() -> Iterator[str]:
    """Accepts connections and reads requests but never answers (a collector busy replaying)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    stop.set()
    thread.join(5)
    for conn in held:
        conn.close()
    sock.close()


def test_a_slow_collector_is_not_called_unreachable(silent_server: str) -> None:
    for ask in (
        lambda: get_json(silent_server, "/api/traces", timeout=0.5),
        lambda: post_json(silent_server, "/api/alerts/replay", {"since": "15m"}, timeout=0.5),
    ):
        with pytest.raises(QueryError) as caught:
            ask()
        message = str(caught.value)
        assert message.startswith(f"the collector at {silent_server} gave no answer within 0.5s")
        assert "busy" in message and "cannot reach" not in message


def test_a_refused_connection_still_says_cannot_reach() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(QueryError, match=r"cannot reach the collector at \S+ \(connection refused\)"):
        get_json(f"http://127.0.0.1:{port}", "/api/traces", timeout=2)


def test_no_agents_says_how_an_agent_gets_listed() -> None:
    assert NO_HEARTBEATS.startswith("no heartbeats")  # what the 80-column test reads
    assert "reach_otel.heartbeat(agent_id)" in NO_HEARTBEATS and "spans alone" in NO_HEARTBEATS

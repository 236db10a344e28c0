"""With content capture on, planted secrets never reach the collector's DuckDB file (the redactor
runs in the app, before export), while the surrounding text does."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from collector_process import CollectorProcess

SECRETS = [
    "sk-proj-PLANTEDkey0123456789abcdef",
    "eyJhbGciOiJIUzI1NiJ9.PLANTEDtoken.signature",
    "planted.person@example.com",
    "4111 1111 1111 1111",
    "hunter2PLANTED",
]

APP = textwrap.dedent(
    """
    import sys, reach_otel
    reach_otel.init(service_name="secrets-app", endpoint=sys.argv[1], capture_content=True)

    @reach_otel.tool(name="charge")
    def charge(note):
        return {"echo": note}

    @reach_otel.agent(name="Billing")
    def billing(question):
        charge(question)
        return "answered: " + question

    billing(
        "MARKER use key sk-proj-PLANTEDkey0123456789abcdef with Authorization: Bearer "
        "eyJhbGciOiJIUzI1NiJ9.PLANTEDtoken.signature, mail planted.person@example.com, "
        "card 4111 1111 1111 1111, db_password=hunter2PLANTED"
    )
    reach_otel.shutdown()
    """
)


def test_planted_secrets_are_not_in_the_store(tmp_path: Path) -> None:
    db = tmp_path / "secrets.duckdb"
    with CollectorProcess(db) as collector:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_"))}
        out = subprocess.run(
            [sys.executable, "-c", APP, collector.url], env=env, capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, out.stderr
        traces = collector.wait_traces(1)
        trace = collector.get(f"/api/traces/{traces[0]['trace_id']}")
    captured = " ".join(str(s["attributes"]) for s in trace["spans"])
    assert "MARKER use key" in captured  # content capture is on
    import duckdb

    with duckdb.connect(str(db), read_only=True) as conn:  # every stored column, read back as text
        rows = conn.execute("SELECT * FROM spans").fetchall()
    stored = " ".join(str(value) for row in rows for value in row)
    assert "MARKER use key" in stored  # the text around the secrets was stored
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("secrets.duckdb"))
    for secret in SECRETS:
        assert secret not in captured
        assert secret not in stored
        assert secret.encode() not in raw

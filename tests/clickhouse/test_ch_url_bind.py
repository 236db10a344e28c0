"""The clickhouse:// URL (password from the URL or the environment, never shown) and client-side
``?`` binding (literals 18.16 reads back as the values bound; placeholders in strings, quoted
names and comments left alone)."""

from __future__ import annotations

import pytest
from ch_server import ClickHouseServer

from reach_collector.store.clickhouse.bind import bind
from reach_collector.text.clickhouse_url import (
    PASSWORD_ENV,
    URLError,
    is_clickhouse_url,
    parse_clickhouse_url,
)

SECRET = "s3cr%40t-pw"  # percent-encoded "s3cr@t-pw"


def test_url_parts_and_password_sources() -> None:
    url = parse_clickhouse_url(f"clickhouse://alice:{SECRET}@ch.example:9440/traces?cluster=prod", env={})
    assert (url.host, url.port, url.database, url.user, url.password, url.cluster) == (
        "ch.example",
        9440,
        "traces",
        "alice",
        "s3cr@t-pw",
        "prod",
    )
    assert url.display() == "clickhouse://alice@ch.example:9440/traces?cluster=prod"
    assert "s3cr" not in repr(url) and "s3cr" not in str(url)
    defaults = parse_clickhouse_url("clickhouse://localhost/reach", env={PASSWORD_ENV: "from-env"})
    assert (defaults.port, defaults.user, defaults.password, defaults.cluster) == (
        9000,
        "default",
        "from-env",
        None,
    )
    assert defaults.display() == "clickhouse://localhost:9000/reach"
    assert is_clickhouse_url("ClickHouse://x/y") and not is_clickhouse_url("./reach-data/traces.duckdb")


@pytest.mark.parametrize(
    ("url", "says"),
    [
        (f"clickhouse://bob:{SECRET}@/db", "no host"),
        (f"clickhouse://bob:{SECRET}@h:9000", "no database"),
        (f"clickhouse://bob:{SECRET}@h:9000/my-db", "letters, digits"),
        (f"clickhouse://bob:{SECRET}@h:9000/db?cluster=a;b", "cluster"),
        (f"clickhouse://bob:{SECRET}@h:9000/db?secure=1", "unknown parameter"),
        (f"clickhouse://bob:{SECRET}@h:notaport/db", "clickhouse://bob@h:notaport/db"),
    ],
)
def test_bad_urls_say_why_without_the_password(url: str, says: str) -> None:
    with pytest.raises(URLError) as info:
        parse_clickhouse_url(url, env={})
    assert says in str(info.value)
    assert "s3cr" not in str(info.value)


def test_bind_skips_literals_names_and_comments() -> None:
    sql = "SELECT '?', \"a?\", `b?` -- ?\n, ? /* ? */, ?"
    assert bind(sql, [1, "x"]) == "SELECT '?', \"a?\", `b?` -- ?\n, 1 /* ? */, 'x'"
    assert bind("SELECT 'it''s ?', ?", [2]) == "SELECT 'it''s ?', 2"
    assert bind("SELECT 'a\\'?', ?", [3]) == "SELECT 'a\\'?', 3"
    with pytest.raises(ValueError, match="more placeholders"):
        bind("SELECT ?, ?", [1])
    with pytest.raises(ValueError, match="1 placeholder"):
        bind("SELECT ?", [1, 2])
    assert bind("SELECT x - ?", [-5]) == "SELECT x - (-5)"  # never "--": a comment


VALUES = [
    0,
    -1,
    2**63 - 1,
    -(2**63),
    1.5,
    -2.25e-300,
    1e300,
    "plain",
    "quote ' and \\ backslash",
    "newline \n tab \t nul \0 end",
    "unicode é 😀",
    "",
    None,
]


def test_bound_literals_read_back_on_18_16(clickhouse: ClickHouseServer) -> None:
    sql = "SELECT " + ", ".join("?" for _ in VALUES)
    assert clickhouse.execute(bind(sql, VALUES)) == [tuple(VALUES)]
    assert clickhouse.execute(bind("SELECT ?, ?, has(?, 'b')", [True, False, ["a", "b"]])) == [(1, 0, 1)]

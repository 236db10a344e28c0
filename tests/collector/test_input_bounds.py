"""Every input is bounded before work: a real collector on loopback answers hostile numbers,
durations, times, escapes, over-long URLs and deeply nested JSON with a 4xx in well under a second,
on every route of its OpenAPI document (and the query parameters routes read themselves). The
review's findings each have their own assertion: quadratic duration parsing, overflowing and
out-of-range times, TraceQL escapes, 30 000-deep JSON."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from collector_helpers import RunningCollector
from test_openapi_fuzz import EXTRA_PARAMS, routes

from reach_collector.api._json_bounds import MAX_DEPTH, lone_surrogate, nesting_depth
from reach_collector.api.limits import MAX_QUERY_BYTES, MAX_URL_BYTES

# A correctness bound for "parsed in linear time with a length cap", not a benchmark: the
# quadratic parses this replaces took 4-10 s on these inputs.
FAST_S = 1.0

# Routes whose query parameters the schema does not list, besides those test_openapi_fuzz names.
MORE_PARAMS = {
    "/api/traces/{trace_id}": ["tree"],
    "/tempo/api/search/tags": ["start", "end"],
    "/tempo/api/v2/search/tags": ["start", "end", "scope"],
    "/tempo/api/search/tag/{name}/values": ["start", "end"],
    "/tempo/api/v2/search/tag/{name}/values": ["start", "end"],
}

DIGITS = "9" * 5000
POWER_400 = "1" + "0" * 400
SURROGATE = b"\xed\xa0\x80"  # U+D800 as UTF-8 would spell it, percent-encoded into the URL
# Query values (bytes go into the URL percent-encoded as they are).
HOSTILE: list[str | bytes] = [
    DIGITS,
    POWER_400,
    "-" + POWER_400,
    "1" + "0" * 30,
    "-1" + "0" * 30,
    "1e400",
    "-1e400",
    "NaN",
    "inf",
    "9" * 400 + "m",
    "9" * 7000 + "ms",
    "1." + "5" * 4000 + "s",
    "٣" * 400,  # digits str.isdigit accepts
    "\\x",
    "\\ud800",
    '"\\x"',
    SURROGATE,
    '{ name = "\\x" }',
    '{ name = "\\ud800" }',
    "{ duration > " + "9" * 7000 + " }",
    "{ " + " && ".join(["duration > 1ms"] * 300) + " }",
    '{ .k = "' + "\\" * 2000 + '" }',
]
DEEP = "[" * 30_000 + "]" * 30_000
# JSON texts for body fields: over-long, out of range, bad escapes, deep.
HOSTILE_JSON = [
    POWER_400,
    "-" + "1" + "0" * 30,
    "1e400",
    '"' + DIGITS + '"',
    '"' + "9" * 400 + 'm"',
    '"\\ud800"',
    '"\\udfff\\ud800"',
    '"' + "x" * 50_000 + '"',
    "[" * 500 + "]" * 500,
    DEEP,
]
BODY_FIELDS = {
    "/api/alerts/replay": ("since", "until", "step"),
    "/api/alerts/{fingerprint}/ack": ("by", "comment"),
    "/api/heartbeats": ("agent_id", "service", "endpoint", "capabilities", "status"),
}
BASE_BODIES: dict[str, dict[str, Any]] = {
    "/api/alerts/replay": {"since": "2026-01-05T08:00:00Z", "until": "2026-01-05T08:05:00Z"},
    "/api/alerts/{fingerprint}/ack": {},
    "/api/heartbeats": {"agent_id": "a"},
}


def _q(value: str | bytes) -> str:
    return quote(value, safe="")


def _timed(client: httpx.Client, method: str, url: str, **kwargs: Any) -> httpx.Response:
    started = time.perf_counter()
    response = client.request(method, url, **kwargs)
    took = time.perf_counter() - started
    assert response.status_code < 500, (method, url[:200], response.status_code, response.text[:300])
    assert took < FAST_S, f"{method} {url[:120]} took {took:.2f}s"
    return response


@pytest.fixture
def collector(start_collector: Callable[..., RunningCollector]) -> RunningCollector:
    return start_collector(alert_loop=False)


@pytest.fixture
def client(collector: RunningCollector) -> Any:
    with httpx.Client(base_url=collector.url, timeout=30) as c:
        yield c


def _bad(client: httpx.Client, url: str, status: int, *named: str, **kwargs: Any) -> str:
    """GET (or ``method=``) ``url``: answered ``status`` in time, the detail naming each of ``named``."""
    method = kwargs.pop("method", "GET")
    response = _timed(client, method, url, **kwargs)
    assert response.status_code == status, (url[:200], response.status_code, response.text[:300])
    detail = str(response.json()["detail"])
    for name in named:
        assert name in detail, (url[:200], detail)
    return detail


def test_tempo_durations_are_parsed_in_linear_time(client: httpx.Client) -> None:
    # 12 000 digits took ~10 s (quadratic); now the URL is over the cap, or the value over its own.
    _bad(client, "/tempo/api/search?minDuration=" + "1" * 12_000, 414)
    _bad(client, "/tempo/api/search?minDuration=" + "1" * 7000, 400, "minDuration")
    _bad(client, "/tempo/api/search?maxDuration=" + "1" * 7000 + "s", 400, "maxDuration")
    _bad(client, "/tempo/api/search?q=" + _q("{ duration > " + "1" * 8000 + " }"), 400, "duration")
    assert _timed(client, "GET", "/tempo/api/search?minDuration=1m30s").status_code == 200
    assert _timed(client, "GET", "/tempo/api/search?q=" + _q("{ duration > 1.5s }")).status_code == 200


def test_lookbacks_and_instants_out_of_range_are_400(client: httpx.Client) -> None:
    _bad(client, "/api/traces?since=" + "1" * 400 + "m", 400, "since")
    _bad(client, "/api/traces?until=" + "1" * 400 + "h", 400, "until")
    _bad(client, "/api/oncall?at=" + "1" * 400, 400, "at")
    _bad(client, "/api/oncall?at=" + "1" * 400 + "m", 400, "at")
    _bad(client, "/api/metrics/timeseries?since=" + "9" * 400 + "s", 400, "since")
    assert _timed(client, "GET", "/api/traces?since=15m").status_code == 200
    assert _timed(client, "GET", "/api/oncall?at=2026-01-05T08:00:00Z").status_code == 200


@pytest.mark.parametrize(
    "route", ["/tempo/api/search", "/tempo/api/search/tags", "/tempo/api/v2/search/tags"]
)
def test_tempo_start_and_end_out_of_range_are_400(client: httpx.Client, route: str) -> None:
    _bad(client, f"{route}?start={POWER_400}", 400, "start")  # OverflowError before
    _bad(client, f"{route}?start=1{'0' * 30}", 400, "start")  # DuckDB int128 error before
    _bad(client, f"{route}?end=-1{'0' * 30}", 400, "end")
    _bad(client, f"{route}?start=-1", 400, "start")
    assert _timed(client, "GET", f"{route}?start=1700000000&end=1700003600").status_code == 200


@pytest.mark.parametrize("literal", ['"\\x"', '"\\ud800"', '"\\udc00x"', '"abc'])
def test_traceql_strings_with_bad_escapes_are_400(client: httpx.Client, literal: str) -> None:
    _bad(client, "/tempo/api/search?q=" + _q("{ name = " + literal + " }"), 400, "TraceQL")


def test_a_traceql_string_keeps_its_escapes(client: httpx.Client) -> None:
    q = '{ span.note = "a \\"quoted\\" \\u00e9" }'
    assert _timed(client, "GET", "/tempo/api/search?q=" + _q(q)).status_code == 200


@pytest.mark.parametrize(
    "path", ["/api/alerts/replay", "/api/alerts/0123456789abcdef/ack", "/api/heartbeats"]
)
def test_deep_json_is_400_naming_the_depth(client: httpx.Client, path: str) -> None:
    headers = {"content-type": "application/json"}
    detail = _bad(client, path, 400, str(MAX_DEPTH), method="POST", content=DEEP, headers=headers)
    assert "nest" in detail
    inner = '{"since": ' + "[" * 100 + "]" * 100 + ', "until": 1}'
    _bad(client, path, 400, "nest", method="POST", content=inner, headers=headers)


def test_nesting_depth_counts_outside_strings_only() -> None:
    assert nesting_depth(b"{}") == 1
    assert nesting_depth(b'{"a": [1, {"b": []}]}') == 4
    assert nesting_depth(b'{"a": "[[[[{{{{", "b": "\\"[[["}') == 1
    assert nesting_depth(b'"\\\\" [[]]') == 2  # an escaped backslash ends before the quote
    assert nesting_depth(b"[" * 30_000) == 30_000
    assert nesting_depth('[["é"]]'.encode("utf-16")) == 2  # json.loads reads UTF-16 too
    assert nesting_depth(b"") == 0 and nesting_depth(b"42") == 0


def test_lone_surrogates_are_found_in_any_string_and_pairs_are_not() -> None:
    assert lone_surrogate(b'{"by": "\\\\ud800"}') is None  # an escaped backslash, then text
    assert lone_surrogate(b'{"by": "\\ud83d\\ude00 \\u00e9"}') is None
    assert lone_surrogate('{"by": "\\ud83d\\ude00"}'.encode("utf-16")) is None
    assert lone_surrogate(b'{"by": "\\\\\\ud800"}') == '"\\\\\\ud800"'  # and then the escape
    assert lone_surrogate(b'{"by": "ok", "\\ud800": 1}') == '"\\ud800"'
    assert lone_surrogate(b'["x", "a\\udc00"]') == '"a\\udc00"'
    assert lone_surrogate(b'["\\ud800\\ud800"]') is not None


def test_urls_and_query_strings_over_the_cap_are_414(client: httpx.Client) -> None:
    filler = "x" * (MAX_QUERY_BYTES - len("service="))
    assert _timed(client, "GET", "/api/traces?service=" + filler).status_code == 200
    detail = _bad(client, "/api/traces?service=" + filler + "x", 414, "query string", str(MAX_QUERY_BYTES))
    assert "bytes" in detail
    _bad(client, "/api/traces/" + "a" * MAX_URL_BYTES, 414, "URL", str(MAX_URL_BYTES))
    _bad(client, "/v1/traces?" + "a" * 60_000, 414, method="POST", content=b"")
    _bad(client, "/healthz?" + "a" * 60_000, 414)


def _query_urls(path: str, names: list[str]) -> list[str]:
    return [f"{path}?{name}={_q(value)}" for name in names for value in HOSTILE]


def _path_urls(path: str) -> list[str]:
    segments = [v for v in HOSTILE if isinstance(v, str) and len(v) < 7000] + [SURROGATE]
    return [re.sub(r"\{[^}]+\}", lambda _, s=s: _q(s), path) for s in segments]  # type: ignore[misc]


def test_every_route_answers_hostile_values_with_4xx_in_time(
    collector: RunningCollector, client: httpx.Client
) -> None:
    spec = _timed(client, "GET", "/openapi.json").json()
    swept = routes(spec)
    assert len(swept) >= 20
    requests = 0
    for method, path, schema_names in swept:
        names = sorted(set(schema_names) | set(EXTRA_PARAMS.get(path, [])) | set(MORE_PARAMS.get(path, [])))
        concrete = path.replace("{trace_id}", "0" * 31 + "1").replace("{name}", "service.name")
        concrete = concrete.replace("{fingerprint}", "0123456789abcdef")
        urls = _query_urls(concrete, names) + (_path_urls(path) if "{" in path else [])
        urls.append(concrete + "?" + "&".join(f"k{i}={'9' * 40}" for i in range(190)))  # near the cap
        urls.append(concrete + "?x=" + "9" * (MAX_QUERY_BYTES + 1))  # over it
        for url in urls:
            if method == "GET":
                _timed(client, "GET", url)
            else:
                _timed(client, method, url, json=BASE_BODIES.get(path, {}))
            requests += 1
        base = BASE_BODIES.get(path)
        for field in BODY_FIELDS.get(path, ()):
            assert base is not None
            for text in HOSTILE_JSON:
                others = ", ".join(f'"{k}": "{v}"' for k, v in base.items() if k != field)
                body = "{" + (others + ", " if others else "") + f'"{field}": {text}' + "}"
                response = _timed(
                    client, method, concrete, content=body, headers={"content-type": "application/json"}
                )
                if path == "/api/alerts/replay":  # none of them is a time or a step
                    assert response.status_code == 400, (field, text[:60], response.text[:300])
                requests += 1
    assert requests > 1000
    assert _timed(client, "GET", "/healthz").json() == {"status": "ok"}

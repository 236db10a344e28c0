"""A property-based run over the collector's published OpenAPI schema: whatever the query values,
path segments and JSON bodies, no route answers 5xx and the server stays up."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# Query parameters some routes read themselves (so the schema does not list them).
EXTRA_PARAMS = {
    "/api/traces": [
        "service",
        "agent",
        "status",
        "since",
        "until",
        "min_duration_ms",
        "attr.gen_ai.agent.name",
        "limit",
    ],
    "/tempo/api/search": ["tags", "minDuration", "maxDuration", "limit", "start", "end", "q"],
}
HOSTILE = st.sampled_from(
    [
        "",
        "'",
        "' OR 1=1 --",
        "); DROP TABLE spans; --",
        "%00",
        "\u0000",
        "9" * 40,
        "-1",
        "1e308",
        "NaN",
        "5m",
        "abc",
    ]
)
VALUES = st.one_of(HOSTILE, st.text(max_size=40), st.integers(-(2**70), 2**70).map(str))
JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=20),
    ),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)


def routes(spec: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    found = []
    for path, methods in spec["paths"].items():
        for method, op in methods.items():
            params = [p["name"] for p in op.get("parameters", []) if p.get("in") == "query"]
            found.append((method.upper(), path, params + EXTRA_PARAMS.get(path, [])))
    return found


def test_no_route_answers_5xx(start_collector) -> None:
    collector = start_collector(alert_loop=False)
    spec = httpx.get(collector.url + "/openapi.json", timeout=10).json()
    all_routes = routes(spec)
    assert len(all_routes) >= 15
    client = httpx.Client(base_url=collector.url, timeout=10)

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        route=st.sampled_from(all_routes),
        segment=VALUES,
        params=st.dictionaries(st.integers(0, 7), VALUES, max_size=4),
        body=JSON,
    )
    def probe(route: tuple[str, str, list[str]], segment: str, params: dict[int, str], body: Any) -> None:
        method, path, names = route
        url = re.sub(r"\{[^}]+\}", lambda _: quote(segment, safe="") or "x", path)
        query = {names[i % len(names)]: v for i, v in params.items()} if names else {}
        if method == "GET":
            response = client.get(url, params=query)
        else:
            response = client.request(method, url, params=query, json=body)
        assert response.status_code < 500, (method, url, query, body, response.text[:300])

    try:
        probe()
    finally:
        client.close()
    assert httpx.get(collector.url + "/healthz", timeout=10).status_code == 200

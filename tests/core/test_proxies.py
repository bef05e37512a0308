"""Proxy routing (mcpfsm/_core/proxies.py) against httpx itself as the oracle.

For each environment and URL, httpx's ``AsyncClient(trust_env=True)`` (or ``proxy=``) picks a transport;
mcpfsm's rules must pick the same proxy, or none. The environment is read through
``urllib.request.getproxies()``, as both libraries do.
"""

from __future__ import annotations

import urllib.request

import httpx
import pytest

from mcpfsm._core.proxies import ProxyRules

ENVIRONMENTS = {
    "none": {},
    "http-only": {"HTTP_PROXY": "http://proxy.test:3128"},
    "https-and-http": {"HTTP_PROXY": "http://plain.test:3128", "HTTPS_PROXY": "http://secure.test:3129"},
    "lower-case": {"http_proxy": "proxy.test:8080", "https_proxy": "https://tls-proxy.test"},
    "all-proxy": {"ALL_PROXY": "http://everything.test:1"},
    "no-proxy-domain": {"ALL_PROXY": "http://p.test:1", "NO_PROXY": "example.com"},
    "no-proxy-dot-domain": {"ALL_PROXY": "http://p.test:1", "NO_PROXY": ".example.com"},
    "no-proxy-star": {"HTTP_PROXY": "http://p.test:1", "NO_PROXY": "*"},
    "no-proxy-list": {"ALL_PROXY": "http://p.test:1", "no_proxy": "localhost, 127.0.0.1,::1 ,internal.test"},
    "no-proxy-origin": {"ALL_PROXY": "http://p.test:1", "NO_PROXY": "http://exempt.test:8080"},
    "specific-beats-all": {"ALL_PROXY": "http://all.test:1", "HTTPS_PROXY": "http://tls.test:2"},
}
URLS = [
    "http://example.com/mcp",
    "https://example.com/mcp",
    "http://www.example.com/mcp",
    "http://notexample.com/mcp",
    "https://api.example.com:8443/mcp",
    "http://localhost:8000/mcp",
    "http://127.0.0.1:8000/mcp",
    "http://[::1]:8000/mcp",
    "http://internal.test/mcp",
    "http://sub.internal.test/mcp",
    "http://exempt.test:8080/mcp",
    "http://exempt.test:8081/mcp",
    "https://exempt.test:8080/mcp",
]


def httpx_choice(client: httpx.AsyncClient, url: str) -> str | None:
    transport = client._transport_for_url(httpx.URL(url))
    if transport is client._transport:
        return None
    proxy = transport._pool._proxy_url  # type: ignore[attr-defined]
    return f"{proxy.scheme.decode()}://{proxy.host.decode()}" + (f":{proxy.port}" if proxy.port else "")


def ours(rules: ProxyRules, url: str) -> str | None:
    parsed = httpx.URL(url)
    chosen = rules.select(parsed.scheme, parsed.host, parsed.port)
    if chosen is None:
        return None
    proxy = httpx.URL(chosen)
    return f"{proxy.scheme}://{proxy.host}" + (f":{proxy.port}" if proxy.port else "")


@pytest.mark.parametrize("environment", ENVIRONMENTS.values(), ids=ENVIRONMENTS.keys())
async def test_the_environment_routes_every_url_as_httpx_does(
    environment: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    rules = ProxyRules.from_environment(urllib.request.getproxies())
    async with httpx.AsyncClient(trust_env=True) as client:
        expected = {url: httpx_choice(client, url) for url in URLS}
    assert {url: ours(rules, url) for url in URLS} == expected


async def test_an_explicit_proxy_carries_everything_whatever_no_proxy_says(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "example.com,localhost")
    rules = ProxyRules.explicit("http://explicit.test:9")
    async with httpx.AsyncClient(proxy="http://explicit.test:9", trust_env=True) as client:
        expected = {url: httpx_choice(client, url) for url in URLS}
    assert {url: ours(rules, url) for url in URLS} == expected == dict.fromkeys(URLS, "http://explicit.test:9")


def test_no_rules_mean_direct() -> None:
    assert ProxyRules().select("https", "example.com", None) is None
    assert ProxyRules.from_environment({}).select("http", "example.com", 80) is None


def test_no_proxy_entries_exempt_what_curl_exempts() -> None:
    exempt = "localhost, 127.0.0.1,::1 ,.internal.test,corp.test"
    rules = ProxyRules.from_environment({"http": "http://p.test:1", "https": "http://p.test:1", "no": exempt})
    urls = [*URLS, "http://corp.test/", "http://a.corp.test/", "http://xcorp.test/"]
    assert {url: ours(rules, url) for url in urls} == {
        "http://example.com/mcp": "http://p.test:1",
        "https://example.com/mcp": "http://p.test:1",
        "http://www.example.com/mcp": "http://p.test:1",
        "http://notexample.com/mcp": "http://p.test:1",
        "https://api.example.com:8443/mcp": "http://p.test:1",
        "http://localhost:8000/mcp": None,
        "http://127.0.0.1:8000/mcp": None,
        "http://[::1]:8000/mcp": None,
        "http://internal.test/mcp": "http://p.test:1",  # ".internal.test" exempts subdomains only
        "http://sub.internal.test/mcp": None,
        "http://exempt.test:8080/mcp": "http://p.test:1",
        "http://exempt.test:8081/mcp": "http://p.test:1",
        "https://exempt.test:8080/mcp": "http://p.test:1",
        "http://corp.test/": None,  # "corp.test" exempts it and its subdomains
        "http://a.corp.test/": None,
        "http://xcorp.test/": "http://p.test:1",
    }

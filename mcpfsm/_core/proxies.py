"""Which proxy, if any, carries a request to an origin: the rules httpx applies, as a pure value.

Pure: no I/O. The HTTP transport reads the environment once (``urllib.request.getproxies()``, which
folds ``HTTP_PROXY``/``http_proxy`` and friends and ignores ``HTTP_PROXY`` in a CGI request) and asks
:meth:`ProxyRules.select` per origin. The rules are httpx 0.28's (``httpx.AsyncClient(trust_env=True)``),
so a user sees the same routing whichever connection layer carries the request:

- an explicit ``proxy=`` carries every request, whatever ``NO_PROXY`` says;
- otherwise ``http``/``https``/``all`` proxies (``ALL_PROXY``) apply by scheme, and ``NO_PROXY``
  entries exempt origins as curl reads them: ``*`` disables every proxy; ``example.com`` exempts it
  and its subdomains; ``.example.com`` only the subdomains; IP addresses and ``localhost`` exactly;
  ``scheme://host[:port]`` exactly that origin;
- the most specific rule wins (one with a port before one without, longer host, longer scheme).

A proxy URL without a scheme means ``http://`` (``HTTP_PROXY=proxy.example:3128``).
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Mapping
from typing import Final, NamedTuple
from urllib.parse import urlsplit

__all__ = ["ProxyRule", "ProxyRules"]

_ENV_SCHEMES: Final = ("http", "https", "all")


class ProxyRule(NamedTuple):
    """One routing rule: requests matching it go through ``proxy`` (``None``: directly).

    Attributes:
        scheme: ``"http"``, ``"https"``, or ``""`` for any.
        host: the host pattern as written (``""`` for any host).
        port: the port to match, or ``None`` for any.
        proxy: the proxy URL, or ``None`` for a direct connection.
    """

    scheme: str
    host: str
    port: int | None
    proxy: str | None

    def matches(self, scheme: str, host: str, port: int | None) -> bool:
        """True when a request to ``scheme://host:port`` falls under this rule."""
        if self.scheme and self.scheme != scheme:
            return False
        if self.host and not _host_pattern(self.host).fullmatch(host.lower()):
            return False
        return self.port is None or self.port == port

    def __repr__(self) -> str:
        """The rule, its proxy URL without a user or password (``http://user:pass@proxy`` carries credentials)."""
        proxy = self.proxy
        if proxy is not None and "@" in proxy:
            parts = urlsplit(proxy)
            proxy = parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]).geturl()
        return f"ProxyRule(scheme={self.scheme!r}, host={self.host!r}, port={self.port!r}, proxy={proxy!r})"

    @property
    def priority(self) -> tuple[int, int, int]:
        """Sort key: the most specific rule first (httpx's order)."""
        return (0 if self.port is not None else 1, -len(self.host), -len(self.scheme))


@functools.lru_cache(maxsize=64)
def _host_pattern(host: str) -> re.Pattern[str]:
    host = host.lower()
    if host.startswith("*."):
        return re.compile(r".+\." + re.escape(host[2:]))
    if host.startswith("*"):
        return re.compile(r"(?:.+\.)?" + re.escape(host[1:]))
    return re.compile(re.escape(host))


class ProxyRules(NamedTuple):
    """An ordered set of :class:`ProxyRule`; the first match decides. Empty: always direct."""

    rules: tuple[ProxyRule, ...] = ()

    @classmethod
    def explicit(cls, proxy: str) -> ProxyRules:
        """Every request goes through ``proxy`` (``Client.http(..., proxy=...)``)."""
        return cls((ProxyRule(scheme="", host="", port=None, proxy=_with_scheme(proxy)),))

    @classmethod
    def from_environment(cls, proxies: Mapping[str, str]) -> ProxyRules:
        """The rules for ``urllib.request.getproxies()``-shaped input (``{"http": …, "no": …}``)."""
        rules: list[ProxyRule] = []
        for scheme in _ENV_SCHEMES:
            if proxies.get(scheme):
                proxy = _with_scheme(proxies[scheme])
                rules.append(ProxyRule(scheme="" if scheme == "all" else scheme, host="", port=None, proxy=proxy))
        for entry in (item.strip() for item in proxies.get("no", "").split(",")):
            if entry == "*":
                return cls()
            if entry:
                rules.append(_exemption(entry))
        # sorted() is stable: among equal priorities the first written wins, as in httpx's dict order.
        return cls(tuple(sorted(rules, key=lambda rule: rule.priority)))

    def select(self, scheme: str, host: str, port: int | None) -> str | None:
        """The proxy URL for a request to ``scheme://host:port`` (``port=None``: the default), or ``None``."""
        for rule in self.rules:
            if rule.matches(scheme, host, port):
                return rule.proxy
        return None


def _with_scheme(proxy: str) -> str:
    return proxy if "://" in proxy else f"http://{proxy}"


def _exemption(entry: str) -> ProxyRule:
    if "://" in entry:
        parts = urlsplit(entry)
        scheme = "" if parts.scheme == "all" else parts.scheme.lower()
        try:
            port = parts.port
        except ValueError:
            port = None
        host = parts.hostname or ""
        return ProxyRule(scheme=scheme, host="" if host == "*" else host, port=port, proxy=None)
    address = entry.split("/")[0]
    if _is_ip(address) or entry.lower() == "localhost":
        return ProxyRule(scheme="", host=address.strip("[]"), port=None, proxy=None)
    return ProxyRule(scheme="", host=f"*{entry}", port=None, proxy=None)


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return False
    return True

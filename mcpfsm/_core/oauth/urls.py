"""URLs: loopback hosts, origins and the https-or-loopback rule (OAuth 2.1 §1.5, RFC 8252 §7.3)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final
from urllib.parse import urlsplit

__all__ = [
    "is_loopback_host",
    "url_host",
]


_DEFAULT_PORTS: Final[Mapping[str, int]] = MappingProxyType({"http": 80, "https": 443})


def is_loopback_host(host: str | None) -> bool:
    """Tell whether ``host`` is ``localhost``, an address in 127.0.0.0/8, or ``::1`` (brackets allowed)."""
    if not host:
        return False
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if bare.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return False


def url_host(url: str) -> str | None:
    """The host of ``url`` as written, compared as a name: lower case, an IP address in its canonical form.

    No name is resolved: ``localhost``, ``127.0.0.1`` and ``127.0.0.2`` are three hosts, as are ``example.com``
    and ``example.com.``. What the URL names is what the caller can see and check; an address a name resolves
    to is what a resolver says, and may change between the check and the request.

    Returns:
        The host, or ``None`` when ``url`` has none or cannot be parsed.
    """
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    if not host:
        return None
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def _is_secure_url(value: object) -> bool:
    """An absolute ``https`` URL, or an ``http`` one on a loopback host; no fragment."""
    if not isinstance(value, str):
        return False
    try:
        parts = urlsplit(value)
        host = parts.hostname
    except ValueError:
        return False
    if parts.fragment or not host:
        return False
    return parts.scheme == "https" or (parts.scheme == "http" and is_loopback_host(host))


def _effective_port(scheme: str, port: int | None) -> int | None:
    return port if port is not None else _DEFAULT_PORTS.get(scheme)


def _drop_one_slash(path: str) -> str:
    return path[:-1] if path.endswith("/") else path

"""URLs of the HTTP transport: parsed and normalised by httpx, redacted in every message, origins and targets.

Credentials in a URL (``http://user:pass@host/mcp``) become ``Authorization: Basic`` (percent-decoded, RFC
7617) and appear nowhere else; an empty userinfo (``http://@host/mcp``) carries none (:func:`carries_credentials`
is the one rule, also for ``Client.http`` and the CLI). httpx is imported on first use, never at import time.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

from ..._core.errors import TransportError

if TYPE_CHECKING:
    import httpx

__all__ = [
    "Origin",
    "basic",
    "carries_credentials",
    "names_credentials",
    "origin",
    "parse_url",
    "redacted",
    "redirect_target",
    "target",
]

Origin = tuple[str, str, int]
"""``(scheme, host, port)``: where a pool connects, and what credentials are bound to."""


def origin(url: httpx.URL) -> Origin:
    """The origin of ``url``, with the scheme's default port filled in."""
    return url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80)


def target(url: httpx.URL) -> str:
    """The request target (RFC 9112 §3.2.1 origin-form): the path and query as they go on the wire."""
    return url.raw_path.decode("ascii")


def redacted(url: httpx.URL) -> str:
    """``url`` as a message may show it: never its credentials (nor a fragment, which never goes on the wire)."""
    return str(url.copy_with(username=None, password=None, fragment=None))


def carries_credentials(url: str) -> bool:
    """True when ``url`` names a user or a password: :class:`HttpTransport` sends them as ``Authorization: Basic``.

    An empty userinfo (``http://@host/mcp``, ``http://:@host/mcp``) carries no credentials: nothing is sent
    for it. A URL httpx cannot parse carries none here (the transport says what is wrong with it).
    """
    import httpx

    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return False
    return names_credentials(parsed)


def names_credentials(url: httpx.URL) -> bool:
    """True when the parsed ``url`` names a user or a password."""
    return bool(url.username or url.password)


def basic(username: str, password: str) -> str:
    """The ``Authorization: Basic`` value (RFC 7617), with UTF-8 as httpx encodes it."""
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode("ascii")


def parse_url(url: str | httpx.URL, what: str) -> httpx.URL:
    """Parse an absolute ``http(s)://`` URL; ``what`` names it in the error.

    Raises:
        TransportError: not a URL, not absolute http(s), or its port is out of range (the message is redacted).
    """
    # httpx parses and normalises URLs (its URL is what this transport keeps); imported here, on first use.
    import httpx

    shown = url if isinstance(url, str) else str(url)
    try:
        parsed = httpx.URL(url)
        shown = redacted(parsed)
    except (httpx.InvalidURL, TypeError) as exc:
        raise TransportError(f"invalid {what} {shown!r}: {exc}") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise TransportError(f"invalid {what} {shown!r}: expected an absolute http:// or https:// URL")
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise TransportError(f"invalid {what} {shown!r}: port {parsed.port} is not between 1 and 65535")
    return parsed


def redirect_target(url: httpx.URL, location: str) -> httpx.URL:
    """Where a redirect from ``url`` with ``Location: location`` goes, without credentials or fragment.

    Raises:
        TransportError: the location is no valid http(s) URL.
    """
    import httpx

    try:
        moved = url.join(location)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise TransportError(f"the server redirects to an invalid URL: {exc}") from exc
    if moved.scheme not in ("http", "https") or not moved.host:
        raise TransportError(f"the server redirects to {redacted(moved)}, which is no http(s) URL")
    # Credentials in a Location are never used (httpx ignores them too); a fragment is never sent.
    return moved.copy_with(username=None, password=None, fragment=None)

"""Forward proxies (as httpcore's ``http_proxy.py``): the route a pool goes through, and the ``CONNECT`` tunnel.

Through a proxy, ``http://`` requests go to the proxy in absolute form (RFC 9112 §3.2.2) and ``https://`` ones
through a ``CONNECT`` tunnel (RFC 9110 §9.3.6), with ``Proxy-Authorization`` when the proxy URL carried
credentials (the pool adds the header and the absolute-form prefix; :func:`tunnel` opens the tunnel).
"""

from __future__ import annotations

import ssl
from typing import NamedTuple

import trio

from ..._core.h1 import ResponseReader, encode_request
from .errors import TunnelError
from .interfaces import RECEIVE_BYTES

__all__ = ["ProxyRoute", "tunnel"]


class ProxyRoute(NamedTuple):
    """A forward proxy every connection of a pool goes through.

    Attributes:
        scheme: ``"http"`` or ``"https"`` (TLS to the proxy itself).
        host: the proxy's host name or IP address (without brackets).
        port: the proxy's port.
        authorization: the ``Proxy-Authorization`` value, if the proxy URL carried credentials.
        ssl_context: for an ``https`` proxy.
    """

    scheme: str
    host: str
    port: int
    authorization: str | None = None
    ssl_context: ssl.SSLContext | None = None

    def __repr__(self) -> str:
        """The proxy's address; never its ``Proxy-Authorization`` (a credential)."""
        return (
            f"ProxyRoute(scheme={self.scheme!r}, host={self.host!r}, port={self.port!r}, "
            f"ssl_context={self.ssl_context!r})"
        )


async def tunnel(stream: trio.abc.Stream, target: str, headers: tuple[tuple[str, str], ...]) -> None:
    """Ask the proxy on ``stream`` for a tunnel to ``target`` (``host:port``); return once it is open.

    RFC 9110 §9.3.6: any 2xx makes the connection a tunnel right after the head.

    Raises:
        TunnelError: the proxy refused, or sent data before the tunnel was used.
    """
    await stream.send_all(encode_request("CONNECT", target, target, headers))
    reader = ResponseReader("CONNECT")
    while (head := reader.read_head()) is None:
        reader.receive(await stream.receive_some(RECEIVE_BYTES))
    if not 200 <= head.status < 300:
        reason = f" {head.reason}" if head.reason else ""
        raise TunnelError(f"the proxy refused to open a tunnel to {target}: HTTP {head.status}{reason}")
    if reader.unread:
        raise TunnelError(f"the proxy sent data before the tunnel to {target} was used")

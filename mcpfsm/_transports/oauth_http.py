"""The HTTP client of the authorization flow: metadata GETs, registration and token POSTs (MCP "Authorization").

Its own ``httpx.AsyncClient``, apart from the MCP endpoint's connection pool, because what it talks to is
different in kind: other origins (authorization servers, identity providers), one request per flow step, and
rules of its own:

- **redirects are never followed** (RFC 9728 §3.1 and RFC 8414 §3.1 fetch metadata from a URL the client
  computed; a token or registration POST is never replayed elsewhere): a 3xx is an answer, and the flow
  treats it as "not here";
- **the MCP access token is never sent**: nothing here knows it; the only credentials on these requests are
  the client's own (``Authorization: Basic`` on a token request, RFC 6749 §2.3.1) and DPoP proofs;
- bodies are bounded (:data:`MAX_BODY`): a metadata document or token response larger than that is an error.

Every httpx exception becomes a :class:`~mcpfsm.TransportError` in one place, chained.
"""

from __future__ import annotations

import contextlib
import os
import ssl
from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING, Any, Final, cast

from .._core.errors import TransportError
from .._core.oauth.answers import Answer

if TYPE_CHECKING:
    import httpx

__all__ = ["MAX_BODY", "OAuthHttp"]

MAX_BODY: Final = 1024 * 1024
"""The largest body read from a metadata, registration or token endpoint (1 MiB)."""

_TIMEOUT: Final = 30.0


class OAuthHttp:
    """Requests to metadata, registration and token endpoints, with no redirects and no MCP token.

    Args:
        timeout: connect, read, write and pool timeouts (default 30 s each).
        transport: an ``httpx.AsyncBaseTransport`` to use instead of httpx's default (tests use
            ``httpx.MockTransport``).
        verify: TLS verification, as httpx takes it (``True``, ``False``, a CA bundle path, an ``SSLContext``);
            the client's own ``verify=``, so the authorization side trusts what the MCP endpoint's does.
        cert: a client certificate: a PEM path, or ``(certificate, key)`` paths.
        proxy: a proxy URL for every request, as httpx takes it.
        trust_env: read proxies and CA settings from the environment, as httpx does.
        user_agent: the ``User-Agent`` header.
    """

    def __init__(
        self,
        *,
        timeout: httpx.Timeout | float | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        verify: bool | str | os.PathLike[str] | ssl.SSLContext = True,
        cert: str | os.PathLike[str] | tuple[str | os.PathLike[str], str | os.PathLike[str]] | None = None,
        proxy: str | None = None,
        trust_env: bool = True,
        user_agent: str = "mcpfsm",
    ) -> None:
        """Keep the settings; the ``httpx.AsyncClient`` is made with the first request, so nothing needs closing before.

        A client that never sent anything holds nothing: ``Client.http`` can fail on a later argument
        without leaving an open HTTP client behind.
        """
        self._settings: dict[str, Any] = {
            "follow_redirects": False,
            "timeout": _TIMEOUT if timeout is None else timeout,
            "transport": transport,
            "verify": verify if isinstance(verify, bool | ssl.SSLContext) else os.fspath(verify),
            "cert": _cert(cert),
            "proxy": proxy,
            "trust_env": trust_env,
            "headers": {"User-Agent": user_agent},
        }
        self._client: httpx.AsyncClient | None = None
        self._closed = False

    @property
    def opened(self) -> bool:
        """True once the first request made the HTTP client (and until :meth:`aclose`)."""
        return self._client is not None

    def _opened(self) -> httpx.AsyncClient:
        if self._closed:
            raise TransportError("the authorization side's HTTP client is closed")
        if self._client is None:
            import httpx  # here, not at module level: `import mcpfsm` does not import httpx

            try:
                self._client = httpx.AsyncClient(**self._settings)
            except (OSError, ssl.SSLError, ValueError) as exc:
                raise TransportError(f"cannot set up the authorization side's HTTP client: {exc}") from exc
        return self._client

    async def fetch(
        self, method: str, url: str, headers: Sequence[tuple[str, str]], body: bytes | None = None
    ) -> Answer:
        """Send one request and return its status, body and ``DPoP-Nonce``; a 3xx is returned, not followed.

        Raises:
            TransportError: the request failed (network, timeout, malformed URL) or the body exceeds
                :data:`MAX_BODY`.
        """
        import httpx

        client = self._opened()
        try:
            async with client.stream(method, url, headers=list(headers), content=body) as response:
                chunks: list[bytes] = []
                size = 0
                # httpx annotates aiter_bytes as an AsyncIterator; it is an async generator, closed when left early.
                pieces = cast("AsyncGenerator[bytes, None]", response.aiter_bytes())
                async with contextlib.aclosing(pieces) as body_chunks:
                    async for chunk in body_chunks:
                        size += len(chunk)
                        if size > MAX_BODY:
                            raise TransportError(f"{method} {url}: the answer is larger than {MAX_BODY} bytes")
                        chunks.append(chunk)
                return Answer(response.status_code, b"".join(chunks), response.headers.get("dpop-nonce"))
        except httpx.TimeoutException as exc:
            raise TransportError(f"{method} {url} timed out ({type(exc).__name__})") from exc
        except (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError) as exc:
            raise TransportError(f"{method} {url} failed: {exc or type(exc).__name__}") from exc

    async def aclose(self) -> None:
        """Close the connections, if a request made any; idempotent. Later requests raise ``TransportError``."""
        self._closed = True
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()


def _cert(
    cert: str | os.PathLike[str] | tuple[str | os.PathLike[str], str | os.PathLike[str]] | None,
) -> str | tuple[str, str] | None:
    if cert is None:
        return None
    if isinstance(cert, tuple):
        return (os.fspath(cert[0]), os.fspath(cert[1]))
    return os.fspath(cert)

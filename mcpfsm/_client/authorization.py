"""The authorization layer of the session path, and the credentials of the HTTP transport (README, "Authorization").

Two parts that share one :class:`~mcpfsm._drivers.authorization.Binding` per client:

- :meth:`AuthorizationLayer.headers` — asked by the HTTP transport for every request to the MCP endpoint
  (every POST, a resuming or standalone GET, the session DELETE) and nowhere else: ``Authorization`` with the
  held token and, for a DPoP-bound token, a fresh ``DPoP`` proof for that method and URL (RFC 9449 §7.1);
- :meth:`AuthorizationLayer.send` — wraps one message's trip through the transport, below the session's
  request layers and era negotiation (so a 401 on ``server/discover`` or ``initialize`` is handled here and
  is never an era signal). Its policy, in one place:

  - a token about to expire, with a refresh token and a bound authorization server, is refreshed first;
  - HTTP 401 runs a flow (discovery from scratch: MCP 2026-07-28 "Authorization"), then the message is
    resent unchanged; HTTP 403 with ``error="insufficient_scope"`` runs a step-up flow and resends; any
    other 403 is the caller's answer;
  - per message, one flow after a 401 and one after a 403; a third challenge ends in ``failed`` (A6);
  - a 401 ``use_dpop_nonce`` from the MCP server is answered by one resend with its nonce (RFC 9449 §9);
  - one flow per client at a time (a ``trio.Lock``); a request that was challenged while another flow
    replaced the token just resends with the new one (A41).

:class:`StaticToken` is the ``auth="…"`` case: a bearer token sent as is, with no flow.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Final

import trio

from .._core import oauth
from .._core.credentials import Authorize, Credential, OAuth, binding_key, tokens_key
from .._core.errors import AuthorizationError, TransportError
from .._drivers.audit import AuditBus
from .._drivers.authorization import AuthorizationFlow, Binding, Entry
from .._transports.base import Reply
from .._transports.oauth_http import OAuthHttp
from .loopback import LoopbackAuthorizer
from .stores import MemoryTokenStore
from .telemetry import Telemetry

__all__ = ["AuthorizationLayer", "Send", "StaticToken"]

Send = Callable[[str, Mapping[str, str]], Awaitable[Reply | None]]
"""One trip of a message through the transport (``Transport.send``)."""

_MAX_SENDS: Final = 6
"""A message is sent at most this often: once, a DPoP nonce resend, one resend after a 401 flow and one
after a 403 step-up, and resends after another request's flow replaced the token."""


class StaticToken:
    """``auth="…"``: one bearer token, sent on every request to the MCP endpoint (RFC 6750 §2.1); no flow."""

    __slots__ = ("_value",)

    def __init__(self, token: str) -> None:
        """Hold ``token``.

        Raises:
            ValueError: the token is empty or is not visible ASCII (it goes into a header).
        """
        if not token or not all("\x21" <= char <= "\x7e" for char in token):
            raise ValueError("a bearer token is a non-empty string of visible ASCII characters")
        self._value = f"Bearer {token}"

    def __repr__(self) -> str:
        return "StaticToken(<hidden>)"

    def headers(self, method: str, url: str) -> Sequence[tuple[str, str]]:
        """``Authorization: Bearer <token>``."""
        return (("Authorization", self._value),)

    async def send(self, send: Send, message: str, headers: Mapping[str, str], *, tool: str = "") -> Reply | None:
        """Send as is: a static token has no flow to run."""
        return await send(message, headers)

    async def aclose(self) -> None:
        """Nothing to release."""


class AuthorizationLayer:
    """Runs authorization flows for one client and puts the resulting token on its requests.

    Args:
        credential: the client's credentials.
        mcp_url: the MCP endpoint.
        protocol: the ``protocol=`` the client was created with (``2026-07-28`` forbids the 2025-03-26 path).
        http: the HTTP client for metadata, registration and token endpoints.
        clock: wall-clock seconds (token expiry, proof and assertion times).
    """

    def __init__(
        self,
        credential: Credential,
        *,
        mcp_url: str,
        protocol: str,
        http: OAuthHttp,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Prepare the layer; nothing is sent or read until the first message."""
        store = credential.store if credential.store is not None else MemoryTokenStore()
        self.binding = Binding(credential, mcp_url=mcp_url, pinned_modern=protocol == "2026-07-28", store=store)
        self.audit = AuditBus()
        """Where flows publish their events; the client replaces it with its own bus."""
        self.telemetry: Telemetry | None = None
        """The client's telemetry, which runs each flow under a span; ``None``: switched off."""
        self._http = http
        self._clock = clock
        self._authorize: Authorize | None = None
        if isinstance(credential, OAuth):
            self._authorize = credential.authorize or LoopbackAuthorizer(credential.redirect_uri)
        self._lock = trio.Lock()
        self._loaded = False

    def __repr__(self) -> str:
        return f"AuthorizationLayer({type(self.binding.credential).__name__}, {self.binding.mcp_url!r})"

    # --- the driver's port ------------------------------------------------------------------------------

    async def fetch(
        self, method: str, url: str, headers: Sequence[tuple[str, str]], body: bytes | None = None
    ) -> oauth.Answer:
        """One request to a metadata, registration or token endpoint (redirects not followed)."""
        return await self._http.fetch(method, url, headers, body)

    async def authorize(self, url: str) -> str:
        """Hand the authorization URL to the credential's ``authorize``."""
        if self._authorize is None:
            raise AuthorizationError("these credentials cannot authorize a user", state=oauth.AUTHORIZING)
        return await self._authorize(url)

    def now(self) -> float:
        """Wall-clock seconds since the epoch."""
        return self._clock()

    # --- the transport's credentials ----------------------------------------------------------------------

    def headers(self, method: str, url: str) -> Sequence[tuple[str, str]]:
        """``Authorization`` (and ``DPoP``) for one request to the MCP endpoint; nothing without a live token."""
        tokens = self.binding.tokens
        if tokens is None:
            return ()
        now = self._clock()
        if tokens.expires_at is not None and now >= tokens.expires_at:
            return ()
        key = self.binding.dpop_key
        if tokens.token_type != "DPoP" or key is None:
            return (("Authorization", tokens.authorization),)
        proof = oauth.dpop_proof(
            key,
            method=method,
            url=url,
            now=now,
            jti=oauth.new_jti(),
            nonce=self.binding.resource_nonce,
            access_token=tokens.access_token,
        )
        return (("Authorization", tokens.authorization), ("DPoP", proof))

    # --- the session layer --------------------------------------------------------------------------------

    async def send(self, send: Send, message: str, headers: Mapping[str, str], *, tool: str = "") -> Reply | None:
        """Send ``message`` through ``send`` with the held token, running flows as the module docstring says.

        Raises:
            AuthorizationError: a flow failed, or the MCP server challenged the resent message again.
            TransportError: as ``send`` raises it (a 403 that asks for no scope included).
        """
        await self._prepare()
        flows: list[Entry] = []
        nonce_resent = False
        for _ in range(_MAX_SENDS):
            used = self.binding.generation
            try:
                reply = await send(message, headers)
            except TransportError as exc:
                if exc.status not in (401, 403):
                    raise
                status, challenges, nonce = exc.status, exc.www_authenticate, exc.dpop_nonce
                answer: Reply | TransportError = exc
            else:
                if reply is not None and reply.dpop_nonce is not None and self.binding.dpop_key is not None:
                    self.binding.resource_nonce = reply.dpop_nonce
                if reply is None or reply.status not in (401, 403):
                    return reply
                status, challenges, nonce = reply.status, reply.www_authenticate, reply.dpop_nonce
                answer = reply
            fresh_nonce = oauth.resource_nonce_challenge(status, challenges, nonce)
            if fresh_nonce is not None and self.binding.dpop_key is not None and not nonce_resent:
                # RFC 9449 §9: the MCP server wants its nonce in the proof; one resend with a fresh proof.
                self.binding.resource_nonce = fresh_nonce
                nonce_resent = True
                continue
            challenge = oauth.resource_challenge(challenges)
            if status == 403 and (challenge is None or challenge.error != "insufficient_scope"):
                return _returned(answer)
            entry = Entry.unauthorized if status == 401 else Entry.forbidden
            async with self._lock:
                if entry not in flows and self.binding.generation != used:
                    continue  # another request's flow replaced the token meanwhile: resend with it
                again = entry in flows
                flows.append(entry)
                await self._run(entry, challenges, again=again, tool=tool, attempt=len(flows))
        raise AuthorizationError(
            f"gave up after sending the message {_MAX_SENDS} times while other flows replaced the token",
            state="starting",
        )

    async def _prepare(self) -> None:
        if not self._loaded:
            self._loaded = True
            await self._load()
        tokens = self.binding.tokens
        if tokens is None or tokens.refresh_token is None or self.binding.metadata is None:
            return
        if tokens.expiring(self._clock()):
            async with self._lock:
                if self.binding.tokens is tokens:
                    await self._run(Entry.expiring, (), again=False, tool="", attempt=1)

    async def _load(self) -> None:
        # Tokens a store kept for this endpoint (from `mcpfsm login`, say): the issuer and resource the
        # endpoint was last authorized with, then that pair's tokens (A39).
        store = self.binding.store
        record = await store.get(binding_key(self.binding.mcp_url))
        if record is None:
            return
        issuer, resource = record.get("issuer"), record.get("resource")
        if not isinstance(issuer, str) or not (resource is None or isinstance(resource, str)):
            return
        stored = await store.get(tokens_key(issuer, resource))
        tokens = oauth.TokenSet.from_dict(stored) if stored is not None else None
        if tokens is not None and self.binding.tokens is None:
            self.binding.tokens = tokens
            self.binding.generation += 1

    async def _run(self, entry: Entry, challenges: Sequence[str], *, again: bool, tool: str, attempt: int) -> None:
        flow = AuthorizationFlow(
            self, self.binding, entry, www_authenticate=challenges, again=again, tool=tool, attempt=attempt
        )
        if self.telemetry is None:
            await flow.run()
        else:
            await self.telemetry.flow(flow)

    async def aclose(self) -> None:
        """Close the HTTP client of the authorization side."""
        await self._http.aclose()


def _returned(answer: Reply | TransportError) -> Reply:
    if isinstance(answer, TransportError):
        raise answer
    return answer

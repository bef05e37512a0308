"""The authorization layer of the session path, and the credentials of the HTTP transport (docs/authorization.md).

Two parts that share one :class:`~mcpfsm._drivers.authorization_binding.Binding` per client:

- :meth:`AuthorizationLayer.headers` — asked by the HTTP transport for every request to the MCP endpoint
  (every POST, a resuming or standalone GET, the session DELETE) and nowhere else: ``Authorization`` with the
  held token and, for a DPoP-bound token, a fresh ``DPoP`` proof for that method and URL (RFC 9449 §7.1);
- :meth:`AuthorizationLayer.send` — wraps one message's trip through the transport, below the session's
  request layers and era negotiation (so a 401 on ``server/discover`` or ``initialize`` is handled here and
  is never an era signal). Its policy, in one place:

  - a token whose refresh is due (``TokenSet.refresh_at``: 60 s ahead of expiry, or a tenth of a shorter
    lifetime), with a refresh token and a bound authorization server, is refreshed first; when that refresh
    fails while the held token is still valid, the held token is sent and the refresh tried again after a
    pause that grows from 2 s to 60 s; no lock is taken and no store read unless a refresh is due;
  - HTTP 401 runs a flow (discovery from scratch: MCP 2026-07-28 "Authorization"), then the message is
    resent unchanged; HTTP 403 with ``error="insufficient_scope"`` runs a step-up flow and resends; any
    other 403 is the caller's answer;
  - per message, one flow after a 401 and one after a 403; a third challenge ends in ``failed``
    (specs/authorization.md, "Why every flow ends");
  - a 401 ``use_dpop_nonce`` from the MCP server is answered by one resend with its nonce (RFC 9449 §9);
  - one flow per client at a time (a ``trio.Lock``); a request that was challenged while another flow
    replaced the token just resends with the new one (single flight: specs/authorization.md).

:class:`StaticToken` is the ``auth="…"`` case: a bearer token sent as is, with no flow.
"""

from __future__ import annotations

import base64
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Final
from urllib.parse import unquote, urlsplit

import trio

from .._core.credentials import (
    Authorize,
    ClientCredentials,
    Credential,
    EnterpriseManaged,
    JwtBearer,
    OAuth,
    TokenStore,
)
from .._core.errors import AuthorizationError, TransportError
from .._core.oauth.answers import Answer
from .._core.oauth.authorization_request import new_jti
from .._core.oauth.challenges import BearerChallenge, read_resource_challenge
from .._core.oauth.dpop import dpop_proof, resource_nonce
from .._core.oauth.redaction import Secrets
from .._core.oauth.tokens import TokenSet
from .._drivers.audit import AuditBus
from .._drivers.authorization import AuthorizationFlow
from .._drivers.authorization_binding import Binding, Entry
from .._log import logger
from .._machines.authorization import State
from .._transports.base import OutgoingMessage, Reply
from .._transports.oauth_http import OAuthHttp
from .loopback import LoopbackAuthorizer
from .stores import MemoryStore
from .telemetry import Telemetry

__all__ = ["AuthorizationLayer", "Send", "StaticToken", "header_secrets"]

Send = Callable[[OutgoingMessage, Mapping[str, str]], Awaitable[Reply | None]]
"""One trip of a message through the transport (``Transport.send``)."""

_PROOFS_KEPT: Final = 16
"""The DPoP proofs last sent to the MCP endpoint that stay secrets to redact (a proof is single-use, and a
server quotes the one it refuses right away)."""

_RETRY_FIRST: Final = 2.0
_RETRY_MAX: Final = 60.0
"""After a failed proactive refresh the held token serves; the next try comes 2 s later, then 4 s, ... 60 s."""

_MAX_SENDS: Final = 6
"""A message is sent at most this often: once, a DPoP nonce resend, one resend after a 401 flow and one
after a 403 step-up, and resends after another request's flow replaced the token."""


class StaticToken:
    """``auth="…"``: one bearer token, sent on every request to the MCP endpoint (RFC 6750 §2.1); no flow."""

    __slots__ = ("_secrets", "_value")

    def __init__(self, token: str) -> None:
        """Hold ``token``.

        Raises:
            ValueError: the token is empty or is not visible ASCII (it goes into a header).
        """
        if not token or not all("\x21" <= char <= "\x7e" for char in token):
            raise ValueError("a bearer token is a non-empty string of visible ASCII characters")
        self._value = f"Bearer {token}"
        self._secrets = Secrets().with_header(self._value)

    def __repr__(self) -> str:
        return "StaticToken(<hidden>)"

    def secrets(self) -> Secrets:
        """The token: what no text leaving the client may quote."""
        return self._secrets

    def headers(self, method: str, url: str) -> Sequence[tuple[str, str]]:
        """``Authorization: Bearer <token>``."""
        return (("Authorization", self._value),)

    async def send(
        self, send: Send, message: OutgoingMessage, headers: Mapping[str, str], *, tool: str = ""
    ) -> Reply | None:
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
        store: where registrations and tokens are kept; ``None``: the credential's own ``store=``, else a
            :class:`~mcpfsm.MemoryStore` of this layer's own.
        audit: where flows publish their events (the client's bus); ``None``: a bus of this layer's own.
        telemetry: the client's telemetry, which runs each flow under a span; ``None``: switched off.
        on_change: called after every new token (a new authorization context empties the response cache).
    """

    def __init__(
        self,
        credential: Credential,
        *,
        mcp_url: str,
        protocol: str,
        http: OAuthHttp,
        clock: Callable[[], float] = time.time,
        store: TokenStore | None = None,
        audit: AuditBus | None = None,
        telemetry: Telemetry | None = None,
        on_change: Sequence[Callable[[], object]] = (),
    ) -> None:
        """Prepare the layer; nothing is sent or read until the first message."""
        if store is None:
            store = credential.store if credential.store is not None else MemoryStore()
        self.binding = Binding(
            credential, mcp_url=mcp_url, pinned_modern=protocol == "2026-07-28", store=store, on_change=on_change
        )
        self.audit = audit if audit is not None else AuditBus()
        """Where flows publish their events (the client's bus)."""
        self.telemetry = telemetry
        """The client's telemetry, which runs each flow under a span; ``None``: switched off."""
        self._http = http
        self._clock = clock
        self._authorize: Authorize | None = None
        if isinstance(credential, OAuth):
            self._authorize = credential.authorize or LoopbackAuthorizer(credential.redirect_uri)
        self._lock = trio.Lock()
        self._loaded = False
        self._refresh_failures = 0
        self._refresh_retry_at = 0.0
        self._proofs: deque[str] = deque(maxlen=_PROOFS_KEPT)
        credential_secrets = Secrets().with_values(
            *(getattr(credential, name, None) for name in ("client_secret", "private_key_pem", "idp_id_token"))
        )
        if isinstance(credential, OAuth | ClientCredentials | EnterpriseManaged) and credential.client_id is not None:
            credential_secrets = credential_secrets.with_client(credential.client_id, credential.client_secret)
        if isinstance(credential, JwtBearer):
            credential_secrets = credential_secrets.with_values(credential.assertion)
        self._credential_secrets = credential_secrets

    def __repr__(self) -> str:
        return f"AuthorizationLayer({type(self.binding.credential).__name__}, {self.binding.mcp_url!r})"

    def secrets(self) -> Secrets:
        """Every secret this client holds now: what no text leaving the client may quote (docs/authorization.md).

        The credential's (a client secret and its Basic form, a private key, an ID token, a workload
        assertion), a registered client's secret, the access and refresh tokens, the DPoP proofs last sent.
        """
        binding = self.binding
        identity = binding.identity
        held = self._credential_secrets.with_tokens(binding.tokens).with_values(*self._proofs)
        if identity is not None:
            held = held.with_client(identity.client_id, identity.client_secret)
        return held

    # --- the driver's port ------------------------------------------------------------------------------

    async def fetch(
        self, method: str, url: str, headers: Sequence[tuple[str, str]], body: bytes | None = None
    ) -> Answer:
        """One request to a metadata, registration or token endpoint (redirects not followed)."""
        return await self._http.fetch(method, url, headers, body)

    async def authorize(self, url: str) -> str:
        """Hand the authorization URL to the credential's ``authorize``."""
        if self._authorize is None:
            raise AuthorizationError("these credentials cannot authorize a user", state=State.authorizing)
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
        proof = dpop_proof(
            key,
            method=method,
            url=url,
            now=now,
            jti=new_jti(),
            nonce=self.binding.resource_nonce,
            access_token=tokens.access_token,
        )
        self._proofs.append(proof)
        return (("Authorization", tokens.authorization), ("DPoP", proof))

    # --- the session layer --------------------------------------------------------------------------------

    async def send(
        self, send: Send, message: OutgoingMessage, headers: Mapping[str, str], *, tool: str = ""
    ) -> Reply | None:
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
            reply, raised = await _trip(send, message, headers)
            # A nonce the server answered with is kept for the next proof (not one on a raised 401 or 403).
            kept = reply.dpop_nonce if reply is not None and raised is None else None
            if kept is not None and self.binding.dpop_key is not None:
                self.binding.keep_resource_nonce(kept)
            if reply is None or reply.status not in (401, 403):
                return reply
            # The one place the challenge is parsed: the nonce, the step-up and the flow all read this value.
            challenged = read_resource_challenge(reply.status, reply.www_authenticate, reply.dpop_nonce)
            fresh_nonce = resource_nonce(challenged)
            if fresh_nonce is not None and self.binding.dpop_key is not None and not nonce_resent:
                # RFC 9449 §9: the MCP server wants its nonce in the proof; one resend with a fresh proof.
                self.binding.keep_resource_nonce(fresh_nonce)
                nonce_resent = True
                continue
            if challenged.status == 403 and not challenged.insufficient_scope:
                return _returned(reply, raised)
            entry = Entry.unauthorized if challenged.status == 401 else Entry.forbidden
            async with self._lock:
                if entry not in flows and self.binding.generation != used:
                    continue  # another request's flow replaced the token meanwhile: resend with it
                again = entry in flows
                flows.append(entry)
                await self._run(entry, challenged.challenge, again=again, tool=tool, attempt=len(flows))
        raise AuthorizationError(
            f"gave up after sending the message {_MAX_SENDS} times while other flows replaced the token",
            state=State.starting,
        )

    async def _prepare(self) -> None:
        if not self._loaded:
            self._loaded = True
            await self._load()
        tokens = self.binding.tokens
        if tokens is None or tokens.refresh_token is None:
            return
        now = self._clock()
        # The hot path: nothing is locked or read unless a refresh is due.
        if not tokens.refresh_due(now) or (now < self._refresh_retry_at and not tokens.expired(now)):
            return
        async with self._lock:
            if self.binding.tokens is not tokens:
                return
            if self.binding.metadata is None:
                # Tokens loaded from a store, before any flow bound an authorization server: nothing to refresh
                # them with yet, but another process may have stored newer ones (docs/stores.md). Read again
                # after a pause; an expired token draws a 401, whose flow refreshes under the store's lock.
                stored = await self.binding.stored()
                if stored is not None and _later(stored, tokens, now):
                    self.binding.adopt(stored)
                    self._refresh_failures = 0
                    self._refresh_retry_at = 0.0
                else:
                    self._pause_refresh()
                return
            try:
                await self._run(Entry.expiring, None, again=False, tool="", attempt=1)
            except AuthorizationError:
                if self.binding.tokens is not tokens or tokens.expired(self._clock()):
                    raise
                # A proactive refresh failed (a 5xx, the network) while the held token is still valid: it
                # serves this request, and the refresh is tried again after a growing pause, not before
                # every request (OAuth 2.1 §4.3: nothing obliges a refresh ahead of expiry).
                pause = self._pause_refresh()
                logger.warning(
                    "refreshing the access token failed; the held token serves until the next try in {} s", pause
                )
                return
            self._refresh_failures = 0
            self._refresh_retry_at = 0.0

    def _pause_refresh(self) -> float:
        # The next try after 2 s, then 4 s, 8 s, ... at most 60 s.
        self._refresh_failures += 1
        pause: float = min(_RETRY_FIRST * 2.0 ** (self._refresh_failures - 1), _RETRY_MAX)
        self._refresh_retry_at = self._clock() + pause
        return pause

    async def _load(self) -> None:
        tokens = await self.binding.stored()
        if tokens is not None and self.binding.tokens is None:
            self.binding.load(tokens)

    async def _run(
        self, entry: Entry, challenge: BearerChallenge | None, *, again: bool, tool: str, attempt: int
    ) -> None:
        flow = AuthorizationFlow(
            self, self.binding, entry, challenge=challenge, again=again, tool=tool, attempt=attempt
        )
        if self.telemetry is None:
            await flow.run()
        else:
            await self.telemetry.flow(flow)

    async def aclose(self) -> None:
        """Close the HTTP client of the authorization side."""
        await self._http.aclose()


def _later(stored: TokenSet, held: TokenSet, now: float) -> bool:
    # Tokens another client stored that replace the held ones: others, still valid, expiring later.
    return (
        stored.access_token != held.access_token
        and not stored.expired(now)
        and (stored.expires_at or 0.0) > (held.expires_at or 0.0)
    )


async def _trip(
    send: Send, message: OutgoingMessage, headers: Mapping[str, str]
) -> tuple[Reply | None, TransportError | None]:
    """One trip of ``message``: a 401 or 403 comes back as a :class:`Reply` whichever way the transport gave it.

    The transport returns a challenge with a JSON-RPC error body as a reply and raises the others as a
    :class:`TransportError`; the second item is that error, which the caller gets again if the layer hands
    the answer back (:func:`_returned`).
    """
    try:
        return await send(message, headers), None
    except TransportError as exc:
        if exc.status not in (401, 403):
            raise
        return Reply(b"", exc.status, None, exc.www_authenticate, exc.dpop_nonce), exc


def _returned(reply: Reply | None, raised: TransportError | None) -> Reply | None:
    # What the caller gets back: the transport's own error for a 401 or 403 it raised, else the reply.
    if raised is not None:
        raise raised
    return reply


def header_secrets(headers: Mapping[str, str] | None, url: str) -> Secrets | None:
    """The secrets a caller's ``Authorization`` header and the URL's credentials hold, or ``None``: none."""
    held = Secrets()
    for name, value in (headers or {}).items():
        if name.lower() in ("authorization", "proxy-authorization"):
            held = held.with_header(value)
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        password = None
    if password:
        user = unquote(parts.username or "")
        basic = base64.b64encode(f"{user}:{unquote(password)}".encode()).decode("ascii")
        held = held.with_values(password, unquote(password), basic)
    return held if held.values else None

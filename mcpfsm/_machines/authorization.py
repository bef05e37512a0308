"""The authorization machine: one OAuth 2.1 flow that gets the client a token for an MCP server, as data.

:data:`AUTHORIZATION` is the single definition. The driver (``mcpfsm._drivers.authorization``) steps through
:data:`COMPILED`; the diagrams in ``specs/authorization.*`` and ``diagrams/authorization.svg`` and the
walkthrough ``specs/authorization.md`` are generated from it.

A flow starts in ``starting``, where the driver reports why it runs: an HTTP 401 from the MCP endpoint
(``unauthorized``: discover everything afresh, MCP 2026-07-28 "Authorization" and RFC 9728), a 403 with
``error="insufficient_scope"`` (``insufficient_scope``: step up at the bound authorization server with the
union of scopes, SEP-835 and SEP-2350), or a held token that is about to expire (``expiring``: refresh,
OAuth 2.1 §4.3). The same state refuses what must not be retried: a second challenge on a request that was
already resent after a flow, and a scope set that already failed its step-up.

The machine is acyclic: retries that must stay bounded happen inside one state and never as edges (the
candidate lists of the two discovery states, the one DPoP nonce retry of a token request, RFC 9449 §8), and
the per-request budget (one flow after a 401, one step-up after a 403) is the session layer's. Which
grant runs after ``registering`` is the credential the client was given: the authorization code with PKCE
(``OAuth``), or a headless grant (``ClientCredentials``, ``JwtBearer``), or the enterprise token exchange
(``EnterpriseManaged``, SEP-990) that first asks the enterprise identity provider for an assertion.

"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Final

from .definition import CompiledMachine, Edge, define, edge

__all__ = ["AUTHORIZATION", "COMPILED", "EDGES", "STATES", "State", "Trigger"]


class State(StrEnum):
    """A state of one authorization flow; names equal values, so ``State.authorizing == "authorizing"``."""

    starting = "starting"
    discovering_resource = "discovering_resource"
    discovering_issuer = "discovering_issuer"
    refreshing = "refreshing"
    registering = "registering"
    asserting = "asserting"
    authorizing = "authorizing"
    exchanging = "exchanging"
    authorized = "authorized"
    failed = "failed"
    cancelled = "cancelled"


class Trigger(StrEnum):
    """A fact the driver reports to leave a state; names equal values, as for :class:`State`."""

    unauthorized = "unauthorized"
    insufficient_scope = "insufficient_scope"
    scope_challenged = "scope_challenged"
    expiring = "expiring"
    challenged_again = "challenged_again"
    already_stepped_up = "already_stepped_up"
    resource_found = "resource_found"
    resource_metadata_absent = "resource_metadata_absent"
    issuer_found = "issuer_found"
    issuer_kept = "issuer_kept"
    issuer_changed = "issuer_changed"
    refreshed = "refreshed"
    refresh_refused = "refresh_refused"
    identified = "identified"
    identified_headless = "identified_headless"
    identified_enterprise = "identified_enterprise"
    asserted = "asserted"
    redirected = "redirected"
    granted = "granted"
    refused = "refused"
    cancelled = "cancelled"


_DESCRIPTIONS: Final[Mapping[State, str]] = {
    State.starting: (
        "Name why the flow runs: a 401 (discover afresh), a 403 `insufficient_scope` (step up with the union "
        "of the held and the challenged scopes), or a held token whose refresh is due (60 s before expiry, or a "
        "tenth of a shorter lifetime); refuse a second "
        "challenge on a request already resent after a flow, and a scope set whose step-up already failed."
    ),
    State.discovering_resource: (
        "GET the Protected Resource Metadata candidates in order (the challenge's `resource_metadata`, the "
        "path-based and the root well-known URLs; no `Authorization`, redirects not followed) and check that "
        "its `resource` names this server; none usable: the 2025-03-26 path, unless pinned to 2026-07-28."
    ),
    State.discovering_issuer: (
        "Pick the authorization server, GET its metadata candidates in order and validate them: `issuer` "
        "equal to the expected one as a raw string, PKCE `S256` advertised, https endpoints (loopback "
        "excepted); a different issuer than the held tokens' drops them (migration)."
    ),
    State.refreshing: (
        "Read the stored tokens, then again under the store's lock on them: newer ones a peer stored are used "
        "without a request; else POST `grant_type=refresh_token` (the newest refresh token stored) with the same "
        "`resource` and client authentication, no `scope` (one retry with the server's DPoP nonce); a refusal "
        "deletes the stored tokens only if they are still the ones spent."
    ),
    State.registering: (
        "Identify the client to this issuer: pre-registered credentials bound to it, else a Client ID "
        "Metadata Document URL, else dynamic registration (`application_type: native`), reused per issuer; "
        "headless credentials go straight to the token endpoint."
    ),
    State.asserting: (
        "Exchange the enterprise ID token at the identity provider for an ID-JAG (RFC 8693 token exchange, "
        "SEP-990)."
    ),
    State.authorizing: (
        "Build the authorization URL (`state`, PKCE S256, `resource`, scopes), hand it to `authorize`, and "
        "validate the redirect: `state`, then `iss` (RFC 9207), then `error`, then `code`."
    ),
    State.exchanging: (
        "POST the grant to the token endpoint (authorization code with `code_verifier`, client credentials, "
        "or JWT bearer) with the same `resource`, a DPoP proof when asked for (one retry with the server's "
        "nonce), and read the tokens."
    ),
    State.authorized: "Terminal: the tokens are held and stored; the request that started the flow is resent.",
    State.failed: "Terminal: the request raises the `AuthorizationError` recorded in the last event.",
    State.cancelled: "Terminal: the trio cancellation propagates; the client stays usable.",
}

_EDGES: Final[tuple[Edge[State, Trigger], ...]] = (
    edge(Trigger.unauthorized, State.starting, State.discovering_resource, "HTTP 401"),
    edge(Trigger.scope_challenged, State.starting, State.discovering_resource, "HTTP 403 insufficient_scope, unbound"),
    edge(Trigger.insufficient_scope, State.starting, State.authorizing, "HTTP 403 insufficient_scope, AS bound"),
    edge(Trigger.expiring, State.starting, State.refreshing, "refresh due, refresh token held"),
    edge(Trigger.challenged_again, State.starting, State.failed, "401/403 on the resent request"),
    edge(Trigger.already_stepped_up, State.starting, State.failed, "scope set already stepped up"),
    edge(Trigger.resource_found, State.discovering_resource, State.discovering_issuer, "PRM names this server"),
    edge(
        Trigger.resource_metadata_absent,
        State.discovering_resource,
        State.discovering_issuer,
        "no PRM: 2025-03-26 path",
    ),
    edge(Trigger.refused, State.discovering_resource, State.failed, "resource mismatch, 5xx, pinned 2026"),
    edge(Trigger.issuer_kept, State.discovering_issuer, State.refreshing, "same issuer, refresh token held"),
    edge(Trigger.issuer_found, State.discovering_issuer, State.registering, "metadata valid"),
    edge(Trigger.issuer_changed, State.discovering_issuer, State.registering, "another issuer: tokens dropped"),
    edge(Trigger.refused, State.discovering_issuer, State.failed, "issuer mismatch, no PKCE S256, no metadata"),
    edge(Trigger.refreshed, State.refreshing, State.authorized, "new access token, or a peer's stored one"),
    edge(Trigger.refresh_refused, State.refreshing, State.registering, "HTTP 400/401: tokens dropped"),
    edge(Trigger.refused, State.refreshing, State.failed, "5xx, network"),
    edge(Trigger.identified, State.registering, State.authorizing, "pre-registered, CIMD or DCR"),
    edge(Trigger.identified_headless, State.registering, State.exchanging, "client credentials, JWT bearer"),
    edge(Trigger.identified_enterprise, State.registering, State.asserting, "enterprise-managed"),
    edge(Trigger.refused, State.registering, State.failed, "credentials of another issuer, no registration"),
    edge(Trigger.asserted, State.asserting, State.exchanging, "ID-JAG from the IdP"),
    edge(Trigger.refused, State.asserting, State.failed, "the IdP refused"),
    edge(Trigger.redirected, State.authorizing, State.exchanging, "state and iss valid, code"),
    edge(Trigger.refused, State.authorizing, State.failed, "state, iss, error, no code"),
    edge(Trigger.granted, State.exchanging, State.authorized, "token response valid"),
    edge(Trigger.refused, State.exchanging, State.failed, "token endpoint refused"),
)
"""The declared transitions but the cancel edges (which ``define`` adds), in the order the diagrams draw them."""

AUTHORIZATION: Final = define(
    "authorization", State, Trigger, _EDGES, _DESCRIPTIONS, cancel=(Trigger.cancelled, State.cancelled),
    title="One authorization flow: OAuth 2.1 for an MCP server",
    walkthrough="tooling.walkthrough_auth", span="authorization",
)
"""The authorization machine."""

STATES: Final[tuple[State, ...]] = AUTHORIZATION.states
"""Every state, in table order: each edge leads further down it."""

EDGES: Final[tuple[Edge[State, Trigger], ...]] = AUTHORIZATION.edges
"""Every declared transition, in the order the diagrams draw them: the cancel edges last."""

COMPILED: Final = CompiledMachine(AUTHORIZATION)
""":data:`AUTHORIZATION` with its transition table, read off a built ``transitions`` Machine."""

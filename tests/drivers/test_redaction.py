"""Held secrets never reach an ``AuthorizationError`` through the server's own text (RFC 6749 §5.2).

The end-to-end cases (a careless local authorization server echoing client secrets, codes, verifiers and
assertions) are in tests/integration/test_authorization.py (``*-echoing``); here the pure rule and the refresh
path of the driver against a scripted token endpoint.
"""

from __future__ import annotations

import pytest

import mcpfsm
from mcpfsm._core import oauth
from mcpfsm._drivers.audit import AuditBus
from mcpfsm._drivers.authorization import AuthorizationFlow
from mcpfsm._drivers.authorization_binding import Entry
from tests.drivers.test_authorization_unit import AS, AS_URL, MCP, METADATA, PRM, PRM_URL, Port, binding


def test_every_held_value_is_redacted_as_is_and_percent_encoded_longest_first() -> None:
    cause = mcpfsm.TransportError("underneath")
    error = mcpfsm.AuthorizationError(
        "the token endpoint answered HTTP 400",
        state="exchanging",
        error="invalid_grant",
        error_description="got s3cret/&x, s3cret%2F%26x, s3cret%2F%26x in a form (s3cret), and sec",
    )
    error.__cause__ = cause

    clean = oauth.redact_server_text(error, ["s3cret/&x", "s3cret", "", "absent"])

    assert str(clean) == (
        "exchanging: the token endpoint answered HTTP 400 (error='invalid_grant', error_description='got [redacted],"
        " [redacted], [redacted] in a form ([redacted]), and sec')"
    )
    assert (clean.state, clean.reason, clean.error) == (
        "exchanging",
        "the token endpoint answered HTTP 400",
        "invalid_grant",
    )
    assert (clean.__cause__, clean.__suppress_context__) == (cause, True)


def test_an_error_without_held_values_in_it_is_returned_as_is() -> None:
    error = mcpfsm.AuthorizationError("r", state="exchanging", error="invalid_client", error_description="no")
    assert oauth.redact_server_text(error, ["secret-value"]) is error
    plain = mcpfsm.AuthorizationError("r", state="registering")
    assert oauth.redact_server_text(plain, ["r", "registering"]) is plain


async def test_a_refresh_refused_with_the_refresh_token_and_secret_in_its_text_shows_neither() -> None:
    held = oauth.TokenSet(
        access_token="at-held-value", refresh_token="rt-held-value", expires_at=0.0, issuer=AS, resource=MCP
    )
    echo = "cannot refresh rt-held-value for c:cs-held-value (Bearer at-held-value)"
    events: list[mcpfsm.CallEvent] = []
    port = Port(
        {
            PRM_URL: (200, PRM),
            AS_URL: (200, METADATA),
            f"{AS}/token": (500, {"error": "server_error", "error_description": echo}),
        }
    )
    bound = binding(mcpfsm.ClientCredentials("c", client_secret="cs-held-value", issuer="https://as.example"))
    bound.tokens = held
    port.audit = AuditBus(events.append)
    flow = AuthorizationFlow(port, bound, Entry.unauthorized, www_authenticate=("Bearer",))

    with pytest.raises(mcpfsm.AuthorizationError) as caught:
        await flow.run()

    expected = (
        "refreshing: the token endpoint answered HTTP 500 (error='server_error', error_description='cannot refresh"
        " [redacted] for c:[redacted] (Bearer [redacted])')"
    )
    assert str(caught.value) == expected
    assert caught.value.error_description == "cannot refresh [redacted] for c:[redacted] (Bearer [redacted])"
    assert [url for _, url in port.fetched] == [PRM_URL, AS_URL, f"{AS}/token"]
    assert events[-1].error == {"type": "AuthorizationError", "code": None, "message": expected}

"""The flow's secret bookkeeping: one value, :class:`~mcpfsm._core.oauth.redaction.Secrets`."""

from __future__ import annotations

import base64

from mcpfsm import AuthorizationError
from mcpfsm._core.oauth.identification import ClientAuthentication
from mcpfsm._core.oauth.issuer import AuthorizationServerMetadata
from mcpfsm._core.oauth.redaction import REDACTED, Secrets
from mcpfsm._core.oauth.token_request import refresh_request
from mcpfsm._core.oauth.tokens import TokenSet

AS = "https://as.example.com"


def test_secrets_collect_what_a_request_sends_and_redact_it() -> None:
    metadata = AuthorizationServerMetadata(
        issuer=AS,
        authorization_endpoint=f"{AS}/authorize",
        token_endpoint=f"{AS}/token",
        code_challenge_methods_supported=("S256",),
    )
    client = ClientAuthentication(client_id="c", method="client_secret_basic", client_secret="cs-1")
    request = refresh_request(metadata, client, refresh_token="rt-1", resource=None)
    basic = base64.b64encode(b"c:cs-1").decode()
    held = Secrets().with_request(request).with_tokens(
        TokenSet(access_token="at-1", refresh_token="rt-2", issuer=AS, resource=None)
    )
    assert {"rt-1", basic, f"Basic {basic}", "at-1", "rt-2"} <= held.values
    assert held.with_values(None, "", 3) is held
    error = AuthorizationError("refused", state="refreshing", error="e", error_description=f"rt-1 {basic} at-1")
    clean = held.redact(error)
    assert clean.error_description == f"{REDACTED} {REDACTED} {REDACTED}"
    assert (clean.state, clean.reason) == ("refreshing", "refused")
    assert "rt-1" not in repr(held) and repr(held) == f"Secrets({len(held.values)} values)"

"""Secrets stay hidden (mcpfsm._core.oauth.redaction): no repr and no error message quotes a secret or a token."""

from __future__ import annotations

import pytest

from mcpfsm._core import oauth as o
from mcpfsm._core.errors import AuthorizationError
from tests.core.oauth_cases import (
    AS,
    CALLBACK,
    as_metadata,
    make_request,
    read,
)

SENTINEL = "SENTINEL-secret-value"


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(o.PreRegisteredClient(issuer=AS, client_id="c", client_secret=SENTINEL), id="pre-registered"),
        pytest.param(
            o.ClientAuthentication(client_id="c", method="client_secret_post", client_secret=SENTINEL),
            id="client-secret",
        ),
        pytest.param(
            o.ClientAuthentication(client_id="c", method="private_key_jwt", client_assertion=SENTINEL),
            id="client-assertion",
        ),
        pytest.param(o.ClientRegistration(issuer=AS, client_id="c", client_secret=SENTINEL), id="registration"),
        pytest.param(o.TokenSet(access_token=SENTINEL, refresh_token=SENTINEL, issuer=AS, resource=None), id="tokens"),
        pytest.param(make_request(state=SENTINEL, code_verifier="v" * 43 + SENTINEL), id="authorization-request"),
        pytest.param(
            o.code_exchange_request(
                as_metadata(), o.ClientAuthentication(client_id="c"), request=make_request(), code=SENTINEL
            ),
            id="token-request",
        ),
    ],
)
def test_repr_hides_secrets(value: object) -> None:
    assert SENTINEL not in repr(value)


def test_errors_never_quote_tokens() -> None:
    with pytest.raises(AuthorizationError) as caught:
        read(200, {"access_token": SENTINEL, "refresh_token": SENTINEL, "token_type": "mac"})
    assert SENTINEL not in str(caught.value)
    with pytest.raises(AuthorizationError) as caught:
        o.read_authorization_response(make_request(), f"{CALLBACK}?code={SENTINEL}&state=wrong")
    assert SENTINEL not in str(caught.value)

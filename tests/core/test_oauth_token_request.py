"""Requests to the token endpoint (mcpfsm._core.oauth.token_request; RFC 6749, RFC 7523, RFC 8693): each grant's
form, client authentication, a DPoP proof."""

from __future__ import annotations

import base64
import re
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from mcpfsm._core import oauth as o
from tests.core.oauth_cases import (
    AS,
    CALLBACK,
    MCP,
    VERIFIER,
    as_metadata,
    ec_private_pem,
    make_request,
)

FORM = ("Content-Type", "application/x-www-form-urlencoded")
ACCEPT = ("Accept", "application/json")


@pytest.mark.parametrize(
    ("client", "extra_headers", "client_form"),
    [
        pytest.param(o.ClientAuthentication(client_id="c1"), (), (("client_id", "c1"),), id="none"),
        pytest.param(
            o.ClientAuthentication(client_id="c1", method="client_secret_post", client_secret="s1"),
            (),
            (("client_id", "c1"), ("client_secret", "s1")),
            id="post",
        ),
        pytest.param(
            o.ClientAuthentication(client_id="id:1", method="client_secret_basic", client_secret="s p&c"),
            (("Authorization", "Basic " + base64.b64encode(b"id%3A1:s+p%26c").decode()),),
            (),
            id="basic-form-encoded",
        ),
        pytest.param(
            o.ClientAuthentication(client_id="c1", method="private_key_jwt", client_assertion="a.b.c"),
            (),
            (
                ("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"),
                ("client_assertion", "a.b.c"),
            ),
            id="private-key-jwt",
        ),
    ],
)
def test_code_exchange_request(
    client: o.ClientAuthentication, extra_headers: tuple[tuple[str, str], ...], client_form: tuple[tuple[str, str], ...]
) -> None:
    request = make_request()
    token_request = o.code_exchange_request(as_metadata(), client, request=request, code="code-1")
    assert token_request == o.TokenRequest(
        url=f"{AS}/token",
        grant_type="authorization_code",
        headers=(ACCEPT, FORM, *extra_headers),
        form=(
            ("grant_type", "authorization_code"),
            ("code", "code-1"),
            ("redirect_uri", CALLBACK),
            ("code_verifier", VERIFIER),
            ("resource", MCP),
            *client_form,
        ),
    )
    assert repr(token_request) == "TokenRequest(url='https://as.example.com/token', grant_type='authorization_code')"


def test_code_exchange_without_resource() -> None:
    token_request = o.code_exchange_request(
        as_metadata(), o.ClientAuthentication(client_id="c"), request=make_request(resource=None), code="x"
    )
    assert token_request.body == (
        b"grant_type=authorization_code&code=x&redirect_uri=http%3A%2F%2F127.0.0.1%3A27418%2Fcallback"
        b"&code_verifier=" + VERIFIER.encode() + b"&client_id=c"
    )


def test_refresh_request() -> None:
    client = o.ClientAuthentication(client_id="c1", method="client_secret_post", client_secret="s1")
    assert o.refresh_request(as_metadata(), client, refresh_token="rt-1", resource=MCP) == o.TokenRequest(
        url=f"{AS}/token",
        grant_type="refresh_token",
        headers=(ACCEPT, FORM),
        form=(
            ("grant_type", "refresh_token"),
            ("refresh_token", "rt-1"),
            ("resource", MCP),
            ("client_id", "c1"),
            ("client_secret", "s1"),
        ),
    )


def test_client_credentials_request_basic() -> None:
    client = o.ClientAuthentication(
        client_id="conformance-test-client", method="client_secret_basic", client_secret="conformance-test-secret"
    )
    basic = base64.b64encode(b"conformance-test-client:conformance-test-secret").decode()
    assert o.client_credentials_request(as_metadata(), client, resource=MCP, scopes=("a", "b")) == o.TokenRequest(
        url=f"{AS}/token",
        grant_type="client_credentials",
        headers=(ACCEPT, FORM, ("Authorization", f"Basic {basic}")),
        form=(("grant_type", "client_credentials"), ("resource", MCP), ("scope", "a b")),
    )


def test_client_assertion_and_private_key_jwt_request() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    assertion = o.client_assertion(
        client_id="cc-client", audience=AS, private_key_pem=ec_private_pem(key), now=1_700_000_000.7, jti="j-1"
    )
    assert jwt.get_unverified_header(assertion) == {"alg": "ES256", "typ": "JWT"}
    claims = jwt.decode(assertion, key.public_key(), algorithms=["ES256"], audience=AS, options={"verify_exp": False})
    assert claims == {
        "iss": "cc-client",
        "sub": "cc-client",
        "aud": AS,
        "iat": 1_700_000_000,
        "exp": 1_700_000_300,
        "jti": "j-1",
    }
    client = o.ClientAuthentication(client_id="cc-client", method="private_key_jwt", client_assertion=assertion)
    assert o.client_credentials_request(as_metadata(), client, resource=MCP, scopes=()).form == (
        ("grant_type", "client_credentials"),
        ("resource", MCP),
        ("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"),
        ("client_assertion", assertion),
    )


def test_client_assertion_bad_key() -> None:
    with pytest.raises(ValueError, match=r"^the private key cannot sign a client assertion with ES256$"):
        o.client_assertion(client_id="c", audience=AS, private_key_pem="not a key", now=0, jti="j")


def test_jwt_bearer_request() -> None:
    client = o.ClientAuthentication(client_id="wl")
    assert o.jwt_bearer_request(
        as_metadata(), client, assertion="h.p.s", resource=MCP, scopes=("s",)
    ) == o.TokenRequest(
        url=f"{AS}/token",
        grant_type="urn:ietf:params:oauth:grant-type:jwt-bearer",
        headers=(ACCEPT, FORM),
        form=(
            ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
            ("assertion", "h.p.s"),
            ("resource", MCP),
            ("scope", "s"),
            ("client_id", "wl"),
        ),
    )


def test_token_exchange_request() -> None:
    client = o.ClientAuthentication(client_id="idp-client")
    assert o.token_exchange_request(
        "https://idp.example.com/token", client, subject_token="id-token", audience=AS, resource=MCP, scopes=("a",)
    ) == o.TokenRequest(
        url="https://idp.example.com/token",
        grant_type="urn:ietf:params:oauth:grant-type:token-exchange",
        headers=(ACCEPT, FORM),
        form=(
            ("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"),
            ("requested_token_type", "urn:ietf:params:oauth:token-type:id-jag"),
            ("audience", AS),
            ("resource", MCP),
            ("scope", "a"),
            ("subject_token", "id-token"),
            ("subject_token_type", "urn:ietf:params:oauth:token-type:id_token"),
            ("client_id", "idp-client"),
        ),
    )


def test_with_dpop_proof_replaces() -> None:
    request = o.refresh_request(as_metadata(), o.ClientAuthentication(client_id="c"), refresh_token="r", resource=None)
    once = request.with_dpop_proof("p1")
    assert once.with_dpop_proof("p2").headers == (ACCEPT, FORM, ("DPoP", "p2"))
    assert once.headers == (ACCEPT, FORM, ("DPoP", "p1"))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        pytest.param({"method": "client_secret_basic"}, "client_secret_basic needs a client secret", id="basic"),
        pytest.param(
            {"method": "client_secret_post", "client_secret": ""},
            "client_secret_post needs a client secret",
            id="post-empty",
        ),
        pytest.param({"method": "private_key_jwt"}, "private_key_jwt needs a client assertion", id="jwt"),
        pytest.param(
            {"method": "tls_client_auth"}, "unknown token endpoint auth method 'tls_client_auth'", id="unknown"
        ),
    ],
)
def test_client_authentication_validation(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        o.ClientAuthentication(client_id="c", **fields)

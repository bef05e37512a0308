"""The authorization request and response (mcpfsm._core.oauth.authorization_request; OAuth 2.1 §4.1, RFC 7636,
RFC 9207): PKCE, the request URL, and reading the redirect back."""

from __future__ import annotations

import re

import pytest

from mcpfsm._core import oauth as o
from tests.core.oauth_cases import (
    AS,
    CALLBACK,
    MCP,
    VERIFIER,
    as_metadata,
    fails,
    make_request,
)

CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


def test_code_challenge_rfc7636_vector() -> None:
    assert o.code_challenge(VERIFIER) == CHALLENGE


@pytest.mark.parametrize("verifier", ["short", "x" * 129, "a" * 42 + "!", "é" * 43])
def test_code_challenge_refuses(verifier: str) -> None:
    with pytest.raises(ValueError, match=r"^a PKCE code verifier is 43-128 characters of \[A-Za-z0-9-._~\]$"):
        o.code_challenge(verifier)


def test_fresh_values() -> None:
    verifier, state, jti = o.new_code_verifier(), o.new_state(), o.new_jti()
    assert re.fullmatch(r"[A-Za-z0-9_-]{86}", verifier)
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", state)
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", jti)
    assert o.code_challenge(verifier)
    assert verifier != o.new_code_verifier()
    assert state != o.new_state()


def test_authorization_request() -> None:
    request = make_request()
    assert request == o.AuthorizationRequest(
        url=(
            "https://as.example.com/authorize?response_type=code&client_id=client+1"
            "&redirect_uri=http%3A%2F%2F127.0.0.1%3A27418%2Fcallback&scope=mcp%3Abasic+offline_access&state=st-1"
            f"&code_challenge={CHALLENGE}&code_challenge_method=S256&resource=https%3A%2F%2Fmcp.example.com%2Fmcp"
        ),
        issuer=AS,
        iss_expected=True,
        client_id="client 1",
        redirect_uri="http://127.0.0.1:27418/callback",
        resource=MCP,
        scopes=("mcp:basic", "offline_access"),
        state="st-1",
        code_verifier=VERIFIER,
    )
    assert repr(request) == (
        "AuthorizationRequest(issuer='https://as.example.com', iss_expected=True, client_id='client 1',"
        " redirect_uri='http://127.0.0.1:27418/callback', resource='https://mcp.example.com/mcp',"
        " scopes=('mcp:basic', 'offline_access'))"
    )


def test_authorization_request_keeps_endpoint_query_and_omits_empty() -> None:
    metadata = as_metadata(
        authorization_endpoint=f"{AS}/authorize?tenant=t1", authorization_response_iss_parameter_supported=False
    )
    request = make_request(metadata=metadata, scopes=(), resource=None)
    assert request.url == (
        "https://as.example.com/authorize?tenant=t1&response_type=code&client_id=client+1"
        f"&redirect_uri=http%3A%2F%2F127.0.0.1%3A27418%2Fcallback&state=st-1&code_challenge={CHALLENGE}"
        "&code_challenge_method=S256"
    )
    assert request.iss_expected is False


def test_authorization_request_needs_endpoint() -> None:
    with fails("authorizing: 'https://as.example.com' has no authorization endpoint"):
        make_request(metadata=as_metadata(authorization_endpoint=None))


@pytest.mark.parametrize(
    ("iss_expected", "query", "outcome"),
    [
        pytest.param(True, f"code=c1&state=st-1&iss={AS}", "c1", id="advertised-correct"),
        pytest.param(False, "code=c1&state=st-1", "c1", id="unadvertised-absent"),
        pytest.param(False, f"state=st-1&code=c1&iss={AS}", "c1", id="unadvertised-correct"),
        pytest.param(True, "code=c1", "the redirect's state is missing or does not match the request", id="no-state"),
        pytest.param(
            True,
            f"code=c1&state=st-2&iss={AS}",
            "the redirect's state is missing or does not match the request",
            id="state-mismatch",
        ),
        pytest.param(
            True,
            f"code=c1&state=st-1&state=st-1&iss={AS}",
            "the redirect's state is missing or does not match the request",
            id="state-twice",
        ),
        pytest.param(
            True,
            "state=st-%C3%A9&code=c1",
            "the redirect's state is missing or does not match the request",
            id="state-non-ascii",
        ),
        pytest.param(
            True,
            "error=access_denied",
            "the redirect's state is missing or does not match the request",
            id="state-checked-before-error",
        ),
        pytest.param(
            True,
            "code=c1&state=st-1",
            "the redirect has no iss though 'https://as.example.com' advertises"
            " authorization_response_iss_parameter_supported",
            id="advertised-missing",
        ),
        pytest.param(
            True,
            "code=c1&state=st-1&iss=https://evil.example.com",
            "the redirect's iss 'https://evil.example.com' is not the issuer 'https://as.example.com'",
            id="advertised-wrong",
        ),
        pytest.param(
            False,
            "code=c1&state=st-1&iss=https://evil.example.com",
            "the redirect's iss 'https://evil.example.com' is not the issuer 'https://as.example.com'",
            id="unadvertised-wrong",
        ),
        pytest.param(
            True,
            f"code=c1&state=st-1&iss={AS}/",
            "the redirect's iss 'https://as.example.com/' is not the issuer 'https://as.example.com'",
            id="no-normalisation-slash",
        ),
        pytest.param(
            True,
            "code=c1&state=st-1&iss=https://AS.example.com",
            "the redirect's iss 'https://AS.example.com' is not the issuer 'https://as.example.com'",
            id="no-normalisation-case",
        ),
        pytest.param(
            True, f"code=c1&state=st-1&iss={AS}&iss={AS}", "the redirect carries iss more than once", id="iss-twice"
        ),
        pytest.param(
            True,
            "error=access_denied&state=st-1&iss=https://evil.example.com",
            "the redirect's iss 'https://evil.example.com' is not the issuer 'https://as.example.com'",
            id="iss-checked-before-error",
        ),
        pytest.param(True, f"state=st-1&iss={AS}", "the redirect carries no single authorization code", id="no-code"),
        pytest.param(
            True, f"code=&state=st-1&iss={AS}", "the redirect carries no single authorization code", id="empty-code"
        ),
        pytest.param(
            True,
            f"code=a&code=b&state=st-1&iss={AS}",
            "the redirect carries no single authorization code",
            id="two-codes",
        ),
    ],
)
def test_read_authorization_response(iss_expected: bool, query: str, outcome: str) -> None:
    request = make_request(metadata=as_metadata(authorization_response_iss_parameter_supported=iss_expected))
    if outcome == "c1":
        assert o.read_authorization_response(request, f"{CALLBACK}?{query}") == "c1"
    else:
        with fails(f"authorizing: {outcome}"):
            o.read_authorization_response(request, f"{CALLBACK}?{query}")


def test_read_authorization_response_error_fields() -> None:
    request = make_request()
    url = f"{CALLBACK}?error=access_denied&error_description=User+said+no&state=st-1&iss={AS}"
    with fails(
        "authorizing: the authorization server refused the authorization request"
        " (error='access_denied', error_description='User said no')"
    ) as caught:
        o.read_authorization_response(request, url)
    assert (caught.value.error, caught.value.error_description) == ("access_denied", "User said no")


def test_read_authorization_response_garbage_url() -> None:
    with fails("authorizing: the redirect's state is missing or does not match the request"):
        o.read_authorization_response(make_request(), "http://[::1")

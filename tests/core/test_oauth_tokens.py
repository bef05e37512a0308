"""Token responses (mcpfsm._core.oauth.tokens; RFC 6749 §5, RFC 8693 §2.2): reading the answer, lifetimes and
when a refresh falls due."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcpfsm._core import oauth as o
from tests.core.oauth_cases import (
    AS,
    MCP,
    body,
    fails,
    read,
)


def test_read_token_response() -> None:
    tokens = read(
        200,
        {
            "access_token": "at",
            "token_type": "bearer",
            "expires_in": 3600,
            "refresh_token": "rt",
            "scope": "mcp:basic mcp:write",
        },
    )
    assert tokens == o.TokenSet(
        access_token="at",
        token_type="Bearer",
        refresh_token="rt",
        expires_at=4600.0,
        issued_at=1000.0,
        scopes=("mcp:basic", "mcp:write"),
        issuer=AS,
        resource=MCP,
    )
    assert tokens.authorization == "Bearer at"
    assert repr(tokens) == (
        "TokenSet(token_type='Bearer', expires_at=4600.0, issued_at=1000.0, scopes=('mcp:basic', 'mcp:write'),"
        " issuer='https://as.example.com', resource='https://mcp.example.com/mcp')"
    )


def test_read_token_response_minimal() -> None:
    assert read(200, {"access_token": "at", "token_type": "Bearer"}) == o.TokenSet(
        access_token="at", issued_at=1000.0, scopes=("mcp:basic",), issuer=AS, resource=MCP
    )


@pytest.mark.parametrize(
    ("expires_in", "expected"),
    [
        (3600, 4600.0),
        ("3600", 4600.0),
        (0, 1000.0),
        (1.5, 1001.5),
        (-1, None),
        (True, None),
        ("soon", None),
        (None, None),
        (float("inf"), None),
        # A server's number is clamped to a year before any float arithmetic (an OverflowError before).
        (o.MAX_TOKEN_LIFETIME, 1000.0 + 31_536_000),
        (o.MAX_TOKEN_LIFETIME + 1, 1000.0 + 31_536_000),
        (10**400, 1000.0 + 31_536_000),
        (1e308, 1000.0 + 31_536_000),
        ("9" * 5000, 1000.0 + 31_536_000),
        ("\u00b2", None),
        ("\u0661", None),
    ],
    ids=repr,
)
def test_expires_in(expires_in: Any, expected: float | None) -> None:
    answer = {"access_token": "at", "token_type": "Bearer", "expires_in": expires_in}
    assert read(200, json.dumps(answer).encode()).expires_at == expected


def test_dpop_token_type() -> None:
    answer = {"access_token": "at", "token_type": "DPoP"}
    assert read(200, answer, dpop=True).token_type == "DPoP"
    assert read(200, answer, dpop=True).authorization == "DPoP at"
    assert read(200, {"access_token": "at", "token_type": "Bearer"}, dpop=True).token_type == "Bearer"
    with fails("exchanging: the token endpoint's token_type 'DPoP' is not Bearer"):
        read(200, answer)
    with fails("exchanging: the token endpoint's token_type 'mac' is not Bearer or DPoP"):
        read(200, {"access_token": "at", "token_type": "mac"}, dpop=True)


def test_refresh_keeps_what_is_omitted() -> None:
    previous = o.TokenSet(
        access_token="old", refresh_token="rt-old", scopes=("a", "offline_access"), issuer=AS, resource=MCP
    )
    kept = read(200, {"access_token": "new", "token_type": "Bearer"}, previous=previous, state="refreshing")
    assert kept == o.TokenSet(
        access_token="new",
        refresh_token="rt-old",
        issued_at=1000.0,
        scopes=("a", "offline_access"),
        issuer=AS,
        resource=MCP,
    )
    rotated = read(
        200, {"access_token": "new", "token_type": "Bearer", "refresh_token": "rt-new", "scope": "a"}, previous=previous
    )
    assert (rotated.refresh_token, rotated.scopes) == ("rt-new", ("a",))


@pytest.mark.parametrize(
    ("status", "content", "state", "message"),
    [
        pytest.param(
            400,
            body({"error": "invalid_grant", "error_description": "used"}),
            "exchanging",
            "exchanging: the token endpoint answered HTTP 400 (error='invalid_grant', error_description='used')",
            id="oauth-error",
        ),
        pytest.param(
            401,
            body({"error": "invalid_client"}),
            "refreshing",
            "refreshing: the token endpoint answered HTTP 401 (error='invalid_client')",
            id="refresh-refused",
        ),
        pytest.param(
            502,
            b"<html>",
            "exchanging",
            "exchanging: the token endpoint answered HTTP 502",
            id="not-json",
        ),
        pytest.param(
            200,
            b"<html>",
            "exchanging",
            "exchanging: the token endpoint's answer is not a JSON object",
            id="200-not-json",
        ),
        pytest.param(
            200,
            b'{"access_token":"at","token_type":"Bearer","scope":"\\ud800"}',
            "exchanging",
            "exchanging: the token endpoint's answer is not a JSON object",
            id="lone-surrogate",
        ),
        pytest.param(
            200,
            b"[" * 100_000 + b"]" * 100_000,
            "exchanging",
            "exchanging: the token endpoint's answer is not a JSON object",
            id="too-deep",
        ),
        pytest.param(
            200,
            body({"token_type": "Bearer"}),
            "exchanging",
            "exchanging: the token endpoint's answer has no access_token",
            id="no-access-token",
        ),
        pytest.param(
            200,
            body({"access_token": "SECRET"}),
            "exchanging",
            "exchanging: the token endpoint's token_type None is not Bearer",
            id="no-token-type",
        ),
    ],
)
def test_read_token_response_fails(status: int, content: bytes, state: str, message: str) -> None:
    with fails(message):
        read(status, content, state=state)


@pytest.mark.parametrize(
    "token",
    [
        pytest.param("SECRET-ACCESS\u00e9", id="non-ascii"),
        pytest.param("SECRET-ACCESS\n", id="newline"),
        pytest.param("SECRET ACCESS", id="space"),
        pytest.param("SECRET-ACCESS\x7f", id="del"),
    ],
)
@pytest.mark.parametrize("state", ["exchanging", "refreshing"])
def test_an_access_token_no_header_can_carry_is_refused_without_quoting_it(token: str, state: str) -> None:
    with fails(
        f"{state}: the token endpoint's access_token holds characters other than visible ASCII, which no"
        " Authorization header can carry (RFC 6750 §2.1)"
    ):
        read(200, {"access_token": token, "token_type": "Bearer"}, state=state)


def test_expiring() -> None:
    tokens = o.TokenSet(access_token="a", expires_at=1000.0, issuer=AS, resource=MCP)
    assert [tokens.expiring(now) for now in (939.0, 940.0, 1000.0)] == [False, True, True]
    assert tokens.expiring(995.0, margin=0) is False
    assert o.TokenSet(access_token="a", issuer=AS, resource=MCP).expiring(1e12) is False


@pytest.mark.parametrize(
    ("issued_at", "expires_at", "refresh_at"),
    [
        (1000.0, 4600.0, 4540.0),  # an hour: 60 s ahead
        (1000.0, 1030.0, 1027.0),  # 30 s: a tenth of it, not a refresh before every request
        (1000.0, 1600.0, 1540.0),  # ten minutes: a tenth is 60 s
        (1000.0, 1000.0, 1000.0),  # expired at once
        (None, 1030.0, 970.0),  # a record stored without issued_at: 60 s
        (1000.0, None, None),  # no expiry known: never refreshed ahead
    ],
    ids=["hour", "30s", "10min", "zero", "no-issued_at", "no-expiry"],
)
def test_a_refresh_falls_due_a_margin_proportionate_to_the_lifetime_ahead(
    issued_at: float | None, expires_at: float | None, refresh_at: float | None
) -> None:
    tokens = o.TokenSet(access_token="a", issued_at=issued_at, expires_at=expires_at, issuer=AS, resource=MCP)
    assert tokens.refresh_at == refresh_at
    if refresh_at is None:
        assert tokens.refresh_due(1e12) is False and tokens.expired(1e12) is False
    else:
        assert [tokens.refresh_due(refresh_at - 0.5), tokens.refresh_due(refresh_at)] == [False, True]
        assert expires_at is not None
        assert [tokens.expired(expires_at - 0.5), tokens.expired(expires_at)] == [False, True]


def test_tokens_round_trip_through_a_store_record_with_their_issue_time() -> None:
    tokens = o.TokenSet(
        access_token="a", refresh_token="r", issued_at=1000.0, expires_at=1030.0, issuer=AS, resource=MCP
    )
    assert o.TokenSet.from_dict(tokens.to_dict()) == tokens
    assert o.TokenSet.from_dict({**tokens.to_dict(), "issued_at": None}) == o.TokenSet(
        access_token="a", refresh_token="r", expires_at=1030.0, issuer=AS, resource=MCP
    )
    record = tokens.to_dict()
    del record["issued_at"]  # written before issued_at existed
    assert o.TokenSet.from_dict(record) == o.TokenSet(
        access_token="a", refresh_token="r", expires_at=1030.0, issuer=AS, resource=MCP
    )
    for bad in (True, "soon", float("nan"), 10**400):
        assert o.TokenSet.from_dict({**tokens.to_dict(), "issued_at": bad}) is None


def test_read_token_exchange_response() -> None:
    answer = {"issued_token_type": o.TOKEN_TYPE_ID_JAG, "access_token": "jag", "token_type": "N_A", "expires_in": 300}
    assert o.read_token_exchange_response(200, body(answer)) == "jag"
    with fails("asserting: the token exchange answer did not issue an ID-JAG"):
        o.read_token_exchange_response(200, body({**answer, "issued_token_type": "urn:x"}))
    with fails("asserting: the token exchange answer has no access_token"):
        o.read_token_exchange_response(200, body({**answer, "access_token": None}))
    with fails("asserting: the token exchange endpoint answered HTTP 400 (error='invalid_grant')"):
        o.read_token_exchange_response(400, body({"error": "invalid_grant"}))

"""Store records (TokenSet and ClientRegistration ``to_dict``/``from_dict``): a round trip keeps every field; a
malformed record reads as nothing stored."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcpfsm._core import oauth as o
from tests.core.oauth_cases import (
    AS,
    MCP,
)


def test_token_and_registration_records_round_trip() -> None:
    tokens = o.TokenSet(
        access_token="a",
        token_type="DPoP",
        refresh_token="r",
        expires_at=12.5,
        scopes=("x", "y"),
        issuer=AS,
        resource=MCP,
    )
    assert o.TokenSet.from_dict(json.loads(json.dumps(tokens.to_dict()))) == tokens
    registration = o.ClientRegistration(
        issuer=AS, client_id="c", client_secret="s", token_endpoint_auth_method="client_secret_post"
    )
    assert o.ClientRegistration.from_dict(json.loads(json.dumps(registration.to_dict()))) == registration


@pytest.mark.parametrize(
    "change",
    [
        {"access_token": ""},
        {"access_token": 5},
        {"token_type": "bearer"},
        {"issuer": None},
        {"refresh_token": 3},
        {"resource": []},
        {"expires_at": True},
        {"expires_at": "soon"},
        {"scopes": "x y"},
        {"scopes": [1]},
        {"access_token": "a\u00e9"},
        {"access_token": "a b"},
        {"expires_at": 10**400},
    ],
    ids=repr,
)
def test_a_malformed_token_record_is_no_tokens(change: dict[str, Any]) -> None:
    record = o.TokenSet(access_token="a", issuer=AS, resource=MCP).to_dict()
    assert o.TokenSet.from_dict({**record, **change}) is None


@pytest.mark.parametrize(
    "change",
    [
        {"client_id": ""},
        {"issuer": 1},
        {"token_endpoint_auth_method": "private_key_jwt"},
        {"client_secret": None, "token_endpoint_auth_method": "client_secret_basic"},
    ],
    ids=repr,
)
def test_a_malformed_registration_record_is_no_registration(change: dict[str, Any]) -> None:
    record = o.ClientRegistration(issuer=AS, client_id="c").to_dict()
    assert o.ClientRegistration.from_dict({**record, **change}) is None

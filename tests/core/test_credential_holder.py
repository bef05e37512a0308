"""Store keys name the credential's holder, never a secret (``mcpfsm._core.credentials``, docs/stores.md)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

import mcpfsm
from mcpfsm._core.credentials import (
    Credential,
    binding_key,
    credential_holder,
    registration_key,
    tokens_key,
)

SECRET = "s3cret-value-never-in-a-key"
ENDPOINT = "https://idp.example/token"


def pem() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def signed(claims: dict[str, str]) -> str:
    return jwt.encode({**claims, "secret": SECRET}, "k" * 32, algorithm="HS256")


KEY_A, KEY_B = pem(), pem()


def assertion() -> Callable[[], Awaitable[str]]:
    async def fresh() -> str:
        return signed({"sub": "w"})

    return fresh


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        pytest.param(
            mcpfsm.ClientCredentials("alice", client_secret=SECRET),
            mcpfsm.ClientCredentials("bob", client_secret=SECRET),
            False,
            id="client-credentials-other-client",
        ),
        pytest.param(
            mcpfsm.ClientCredentials("alice", client_secret=SECRET),
            mcpfsm.ClientCredentials("alice", client_secret="another-secret", scope="x"),
            True,
            id="client-credentials-same-client-other-secret-and-scope",
        ),
        pytest.param(
            mcpfsm.ClientCredentials("alice", private_key_pem=KEY_A),
            mcpfsm.ClientCredentials("alice", private_key_pem=KEY_B),
            False,
            id="client-credentials-other-key",
        ),
        pytest.param(
            mcpfsm.ClientCredentials("alice", private_key_pem=KEY_A),
            mcpfsm.ClientCredentials("alice", private_key_pem=KEY_A.encode()),
            True,
            id="client-credentials-same-key",
        ),
        pytest.param(
            mcpfsm.ClientCredentials("alice", private_key_pem=KEY_A),
            mcpfsm.ClientCredentials("alice", client_secret=SECRET),
            False,
            id="client-credentials-key-or-secret",
        ),
        pytest.param(
            mcpfsm.JwtBearer("w", signed({"iss": "https://wi", "sub": "one"})),
            mcpfsm.JwtBearer("w", signed({"iss": "https://wi", "sub": "two"})),
            False,
            id="jwt-bearer-other-subject",
        ),
        pytest.param(
            mcpfsm.JwtBearer("w", signed({"iss": "https://wi", "sub": "one"})),
            mcpfsm.JwtBearer("w", signed({"iss": "https://wi", "sub": "one", "jti": "again"})),
            True,
            id="jwt-bearer-same-subject-fresh-assertion",
        ),
        pytest.param(
            mcpfsm.JwtBearer("w", assertion()),
            mcpfsm.JwtBearer("w", assertion()),
            True,
            id="jwt-bearer-callable-is-its-client",
        ),
        pytest.param(
            mcpfsm.EnterpriseManaged("c", SECRET, "idp", signed({"iss": "https://idp", "sub": "u1"}), ENDPOINT),
            mcpfsm.EnterpriseManaged("c", SECRET, "idp", signed({"iss": "https://idp", "sub": "u2"}), ENDPOINT),
            False,
            id="enterprise-other-user",
        ),
        pytest.param(
            mcpfsm.EnterpriseManaged("c", SECRET, "idp", signed({"iss": "https://idp", "sub": "u1"}), ENDPOINT),
            mcpfsm.EnterpriseManaged("c", "other", "idp", signed({"iss": "https://idp", "sub": "u1"}), ENDPOINT),
            True,
            id="enterprise-same-user",
        ),
        pytest.param(
            mcpfsm.EnterpriseManaged("c", SECRET, "idp", "an-opaque-id-token", ENDPOINT),
            mcpfsm.EnterpriseManaged("c", SECRET, "idp", "an-opaque-id-token", ENDPOINT),
            False,
            id="enterprise-opaque-id-token-shares-nothing",
        ),
        pytest.param(mcpfsm.OAuth(), mcpfsm.OAuth(scope="a", client_name="x"), True, id="oauth-registering"),
        pytest.param(
            mcpfsm.OAuth(client_id="one", client_issuer="https://as"),
            mcpfsm.OAuth(client_id="two", client_issuer="https://as"),
            False,
            id="oauth-other-pre-registered-client",
        ),
        pytest.param(
            mcpfsm.OAuth(),
            mcpfsm.OAuth(client_metadata_url="https://app.example/client.json"),
            False,
            id="oauth-registering-or-metadata-document",
        ),
    ],
)
def test_holders_tell_identities_apart(first: Credential, second: Credential, same: bool) -> None:
    assert (credential_holder(first) == credential_holder(second)) is same


@pytest.mark.parametrize(
    "credential",
    [
        mcpfsm.ClientCredentials("client-id-x", client_secret=SECRET),
        mcpfsm.ClientCredentials("client-id-x", private_key_pem=KEY_A),
        mcpfsm.JwtBearer("client-id-x", signed({"iss": "https://wi", "sub": "one"})),
        mcpfsm.EnterpriseManaged("client-id-x", SECRET, "idp", signed({"iss": "https://idp", "sub": "u"}), ENDPOINT),
        mcpfsm.OAuth(client_id="client-id-x", client_secret=SECRET, client_issuer="https://as"),
    ],
    ids=["secret", "key", "jwt-bearer", "enterprise", "oauth"],
)
def test_no_key_shows_a_secret_or_the_client_id(credential: Credential) -> None:
    holder = credential_holder(credential)
    assert re.fullmatch(r"(oauth|client-credentials|jwt-bearer|enterprise):[0-9a-f]{32}", holder)
    keys = " ".join(
        (
            tokens_key("https://as", "https://mcp/mcp", holder),
            registration_key("https://as", holder),
            binding_key("https://mcp/mcp", holder),
        )
    )
    held = [SECRET, "client-id-x", KEY_A, *KEY_A.splitlines()[1:-1]]
    for name in ("assertion", "idp_id_token"):
        value = getattr(credential, name, None)
        if isinstance(value, str):
            held += value.split(".")
    assert not [value for value in held if value and value in keys]


def test_keys_name_issuer_resource_and_holder() -> None:
    assert tokens_key("https://as", None, "oauth:00") == "tokens https://as - oauth:00"
    assert tokens_key("https://as", "https://mcp/mcp", "oauth:00") == "tokens https://as https://mcp/mcp oauth:00"
    assert registration_key("https://as", "oauth:00") == "registration https://as oauth:00"
    assert binding_key("https://mcp/mcp", "oauth:00") == "binding https://mcp/mcp oauth:00"

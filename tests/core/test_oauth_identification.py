"""Client identification (mcpfsm._core.oauth.identification; RFC 7591, SEP-991): pre-registration, a client
metadata document or dynamic registration, each client's authentication method, the registration answer."""

from __future__ import annotations

import re
from typing import Any

import pytest

from mcpfsm._core import oauth as o
from tests.core.oauth_cases import (
    AS,
    as_metadata,
    body,
    fails,
)

PRE = o.PreRegisteredClient(issuer=AS, client_id="pre", client_secret="s")
OTHER = o.PreRegisteredClient(issuer="https://other.example.com", client_id="x")
CIMD_URL = "https://client.example.com/client-metadata.json"


@pytest.mark.parametrize(
    ("metadata", "pre_registered", "cimd_url", "expected"),
    [
        pytest.param(
            as_metadata(client_id_metadata_document_supported=True),
            (OTHER, PRE),
            CIMD_URL,
            o.ClientIdentification.pre_registered,
            id="pre-registered-first",
        ),
        pytest.param(
            as_metadata(client_id_metadata_document_supported=True),
            (),
            CIMD_URL,
            o.ClientIdentification.client_metadata_document,
            id="cimd",
        ),
        pytest.param(
            as_metadata(client_id_metadata_document_supported=True),
            (),
            None,
            o.ClientIdentification.dynamic_registration,
            id="cimd-unconfigured",
        ),
        pytest.param(as_metadata(), (), CIMD_URL, o.ClientIdentification.dynamic_registration, id="cimd-unsupported"),
    ],
)
def test_choose_client_identification(
    metadata: o.AuthorizationServerMetadata,
    pre_registered: tuple[o.PreRegisteredClient, ...],
    cimd_url: str | None,
    expected: o.ClientIdentification,
) -> None:
    assert (
        o.choose_client_identification(metadata, pre_registered=pre_registered, client_metadata_url=cimd_url)
        == expected
    )


def test_choose_client_identification_refuses() -> None:
    with fails(
        "registering: the pre-registered credentials belong to ['https://other.example.com'], not to"
        " 'https://as.example.com'"
    ):
        o.choose_client_identification(
            as_metadata(client_id_metadata_document_supported=True),
            pre_registered=(OTHER,),
            client_metadata_url=CIMD_URL,
        )
    with fails(
        "registering: 'https://as.example.com' offers no client registration and no credentials are configured for it"
    ):
        o.choose_client_identification(as_metadata(registration_endpoint=None))


@pytest.mark.parametrize(
    ("supported", "has_secret", "configured", "expected"),
    [
        pytest.param(None, True, None, "client_secret_basic", id="absent-means-basic"),
        pytest.param(("client_secret_post",), True, None, "client_secret_post", id="post-only"),
        pytest.param(
            ("client_secret_post", "client_secret_basic"), True, None, "client_secret_basic", id="basic-preferred"
        ),
        pytest.param(("none",), True, None, "client_secret_post", id="secret-but-none-listed"),
        pytest.param(("client_secret_basic",), False, None, "none", id="no-secret"),
        pytest.param(("client_secret_basic",), True, "client_secret_post", "client_secret_post", id="configured"),
    ],
)
def test_pre_registered_auth_method(
    supported: tuple[str, ...] | None, has_secret: bool, configured: Any, expected: str
) -> None:
    metadata = as_metadata(token_endpoint_auth_methods_supported=supported)
    assert o.pre_registered_auth_method(metadata, has_secret=has_secret, configured=configured) == expected


@pytest.mark.parametrize(
    ("supported", "expected"),
    [
        pytest.param(None, "client_secret_basic", id="absent"),
        pytest.param(("client_secret_basic", "none"), "none", id="none-first"),
        pytest.param(("client_secret_post", "client_secret_basic"), "client_secret_basic", id="basic"),
        pytest.param(("client_secret_post",), "client_secret_post", id="post"),
        pytest.param(("private_key_jwt",), "client_secret_post", id="otherwise-post"),
    ],
)
def test_registration_auth_method(supported: tuple[str, ...] | None, expected: str) -> None:
    assert o.registration_auth_method(as_metadata(token_endpoint_auth_methods_supported=supported)) == expected


def test_registration_request() -> None:
    assert o.registration_request(
        client_name="mcpfsm", redirect_uris=["http://127.0.0.1:27418/callback"], token_endpoint_auth_method="none"
    ) == {
        "client_name": "mcpfsm",
        "redirect_uris": ["http://127.0.0.1:27418/callback"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
    }


def test_client_metadata_document() -> None:
    assert o.client_metadata_document(
        client_metadata_url=CIMD_URL, client_name="mcpfsm", redirect_uris=("http://localhost:3000/callback",)
    ) == {
        "client_id": CIMD_URL,
        "client_name": "mcpfsm",
        "redirect_uris": ["http://localhost:3000/callback"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }


@pytest.mark.parametrize("url", ["http://c.example.com/m.json", "https://c.example.com", "https://c.example.com/", "x"])
def test_check_client_metadata_url(url: str) -> None:
    with pytest.raises(
        ValueError, match="^" + re.escape(f"client_metadata_url {url!r} must be an https URL with a path") + "$"
    ):
        o.check_client_metadata_url(url)


@pytest.mark.parametrize(
    ("status", "answer", "requested", "expected"),
    [
        pytest.param(
            201,
            {"client_id": "c1", "client_secret": "s1", "token_endpoint_auth_method": "client_secret_basic"},
            "none",
            o.ClientRegistration(
                issuer=AS, client_id="c1", client_secret="s1", token_endpoint_auth_method="client_secret_basic"
            ),
            id="server-assigns-basic",
        ),
        pytest.param(
            200,
            {"client_id": "c2"},
            "none",
            o.ClientRegistration(issuer=AS, client_id="c2", token_endpoint_auth_method="none"),
            id="requested-kept",
        ),
        pytest.param(
            201,
            {"client_id": "c3", "client_secret": "s3"},
            "client_secret_post",
            o.ClientRegistration(
                issuer=AS, client_id="c3", client_secret="s3", token_endpoint_auth_method="client_secret_post"
            ),
            id="post",
        ),
    ],
)
def test_read_registration_response(
    status: int, answer: dict[str, Any], requested: Any, expected: o.ClientRegistration
) -> None:
    assert o.read_registration_response(status, body(answer), issuer=AS, requested_method=requested) == expected


@pytest.mark.parametrize(
    ("status", "content", "message"),
    [
        pytest.param(
            400,
            body({"error": "invalid_redirect_uri", "error_description": "no"}),
            "registering: the registration endpoint answered HTTP 400 (error='invalid_redirect_uri',"
            " error_description='no')",
            id="error",
        ),
        pytest.param(500, b"oops", "registering: the registration endpoint answered HTTP 500", id="500"),
        pytest.param(
            201, body({"client_secret": "s"}), "registering: the registration answer has no client_id", id="no-id"
        ),
        pytest.param(201, b"x", "registering: the registration answer has no client_id", id="not-json"),
        pytest.param(
            201,
            body({"client_id": "c", "token_endpoint_auth_method": "tls_client_auth"}),
            "registering: the registration answer assigns token endpoint auth method 'tls_client_auth'",
            id="unknown-method",
        ),
        pytest.param(
            201,
            body({"client_id": "c", "token_endpoint_auth_method": "client_secret_basic"}),
            "registering: the registration answer assigns client_secret_basic but no client_secret",
            id="basic-without-secret",
        ),
    ],
)
def test_read_registration_response_fails(status: int, content: bytes, message: str) -> None:
    with fails(message):
        o.read_registration_response(status, content, issuer=AS, requested_method="none")

"""What the oauth core's tests (tests/core/test_oauth_*.py) share: example URLs, metadata and a refusal matcher."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from hypothesis import strategies as st

from mcpfsm._core import oauth as o
from mcpfsm._core.errors import AuthorizationError

MCP = "https://mcp.example.com/mcp"
AS = "https://as.example.com"


def fails(message: str) -> Any:
    return pytest.raises(AuthorizationError, match="^" + re.escape(message) + "$")


def as_metadata(**changes: Any) -> o.AuthorizationServerMetadata:
    fields: dict[str, Any] = {
        "issuer": AS,
        "authorization_endpoint": f"{AS}/authorize",
        "token_endpoint": f"{AS}/token",
        "registration_endpoint": f"{AS}/register",
        "code_challenge_methods_supported": ("S256",),
        "authorization_response_iss_parameter_supported": True,
    }
    return o.AuthorizationServerMetadata(**{**fields, **changes})


def body(document: Any) -> bytes:
    return json.dumps(document).encode()


VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
"""The PKCE code verifier of RFC 7636 Appendix B."""
CALLBACK = "http://127.0.0.1:27418/callback"

hosts = st.from_regex(r"[a-z][a-z0-9]{0,8}(\.[a-z][a-z0-9]{0,8}){0,2}", fullmatch=True)
"""Host names of one to three labels (hypothesis)."""


def make_request(**changes: Any) -> o.AuthorizationRequest:
    arguments: dict[str, Any] = {
        "client_id": "client 1",
        "redirect_uri": "http://127.0.0.1:27418/callback",
        "resource": MCP,
        "scopes": ("mcp:basic", "offline_access"),
        "state": "st-1",
        "code_verifier": VERIFIER,
    }
    metadata = changes.pop("metadata", as_metadata())
    return o.authorization_request(metadata, **{**arguments, **changes})


def read(status: int, answer: Any, **changes: Any) -> o.TokenSet:
    arguments: dict[str, Any] = {"now": 1000.0, "issuer": AS, "resource": MCP, "requested_scopes": ("mcp:basic",)}
    content = answer if isinstance(answer, bytes) else body(answer)
    return o.read_token_response(status, content, **{**arguments, **changes})


def ec_private_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )

"""DPoP (mcpfsm._core.oauth.dpop; RFC 9449): proofs for the token endpoint and the resource, keys, `htu`, the
signing algorithm, nonce challenges."""

from __future__ import annotations

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from mcpfsm._core import oauth as o
from tests.core.oauth_cases import (
    AS,
    MCP,
    as_metadata,
    body,
    ec_private_pem,
    fails,
)


def test_dpop_proof_for_token_endpoint() -> None:
    key = o.DPoPKey.generate()
    proof = o.dpop_proof(key, method="post", url=f"{AS}/token?x=1#f", now=1700000000.9, jti="j1")
    header = jwt.get_unverified_header(proof)
    assert header == {"alg": "ES256", "typ": "dpop+jwt", "jwk": key.public_jwk}
    assert sorted(key.public_jwk) == ["crv", "kty", "x", "y"]
    public = jwt.PyJWK(header["jwk"], algorithm="ES256").key
    assert jwt.decode(proof, public, algorithms=["ES256"], options={"verify_iat": False}) == {
        "jti": "j1",
        "htm": "POST",
        "htu": f"{AS}/token",
        "iat": 1700000000,
    }


def test_dpop_proof_for_resource_with_nonce() -> None:
    key = o.DPoPKey.generate()
    token = "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"
    proof = o.dpop_proof(key, method="GET", url=MCP, now=5, jti="j2", nonce="n-1", access_token=token)
    claims = jwt.decode(proof, key.private_key.public_key(), algorithms=["ES256"], options={"verify_iat": False})
    assert claims == {
        "jti": "j2",
        "htm": "GET",
        "htu": MCP,
        "iat": 5,
        "nonce": "n-1",
        "ath": "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo",
    }


def test_dpop_key_loading() -> None:
    private = ec.generate_private_key(ec.SECP256R1())
    key = o.DPoPKey.from_pem(ec_private_pem(private).decode())
    assert key.public_jwk == o.DPoPKey(private_key=private).public_jwk
    assert repr(key) == "DPoPKey()"
    with pytest.raises(ValueError, match=r"^a DPoP key for ES256 is on the P-256 curve$"):
        o.DPoPKey(private_key=ec.generate_private_key(ec.SECP384R1()))
    with pytest.raises(ValueError, match=r"^the DPoP key is not an unencrypted PEM private key$"):
        o.DPoPKey.from_pem("nope")


@pytest.mark.parametrize(
    ("url", "expected"),
    [(f"{AS}/token", f"{AS}/token"), (f"{AS}/token?a=1", f"{AS}/token"), (f"{MCP}#x", MCP), ("https://h", "https://h")],
)
def test_dpop_htu(url: str, expected: str) -> None:
    assert o.dpop_htu(url) == expected


@pytest.mark.parametrize(
    ("as_algs", "rs_algs", "outcome"),
    [
        pytest.param(None, None, "ES256", id="unlisted"),
        pytest.param(("ES256", "RS256"), ("ES256",), "ES256", id="listed"),
        pytest.param(("RS256",), None, "DPoP signing algorithms ['RS256'] do not include ES256", id="as-lacks"),
        pytest.param(("ES256",), ("PS256",), "DPoP signing algorithms ['PS256'] do not include ES256", id="rs-lacks"),
    ],
)
def test_dpop_signing_algorithm(as_algs: tuple[str, ...] | None, rs_algs: tuple[str, ...] | None, outcome: str) -> None:
    metadata = as_metadata(dpop_signing_alg_values_supported=as_algs)
    prm = o.ProtectedResourceMetadata(
        resource=MCP, authorization_servers=(AS,), dpop_signing_alg_values_supported=rs_algs
    )
    if outcome == "ES256":
        assert o.dpop_signing_algorithm(metadata, prm) == "ES256"
    else:
        with fails(f"discovering_issuer: {outcome}"):
            o.dpop_signing_algorithm(metadata, prm)


@pytest.mark.parametrize(
    ("status", "content", "nonce", "expected"),
    [
        pytest.param(400, body({"error": "use_dpop_nonce"}), "n-1", "n-1", id="challenge"),
        pytest.param(400, body({"error": "use_dpop_nonce"}), None, None, id="no-header"),
        pytest.param(400, body({"error": "use_dpop_nonce"}), 'bad"nonce', None, id="bad-header"),
        pytest.param(400, body({"error": "invalid_grant"}), "n-1", None, id="other-error"),
        pytest.param(401, body({"error": "use_dpop_nonce"}), "n-1", None, id="other-status"),
        pytest.param(400, b"x", "n-1", None, id="not-json"),
    ],
)
def test_token_endpoint_nonce_challenge(status: int, content: bytes, nonce: str | None, expected: str | None) -> None:
    assert o.token_endpoint_nonce_challenge(status, content, nonce) == expected


@pytest.mark.parametrize(
    ("status", "challenge", "nonce", "expected"),
    [
        pytest.param(401, ['Bearer realm="x"', 'DPoP error="use_dpop_nonce"'], "n-2", "n-2", id="challenge"),
        pytest.param(401, 'Bearer error="use_dpop_nonce"', "n-2", None, id="bearer-scheme"),
        pytest.param(401, 'DPoP error="invalid_token"', "n-2", None, id="other-error"),
        pytest.param(403, 'DPoP error="use_dpop_nonce"', "n-2", None, id="other-status"),
        pytest.param(401, 'DPoP error="use_dpop_nonce"', None, None, id="no-header"),
    ],
)
def test_resource_nonce_challenge(
    status: int, challenge: str | list[str], nonce: str | None, expected: str | None
) -> None:
    assert o.resource_nonce_challenge(status, challenge, nonce) == expected

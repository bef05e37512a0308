"""The ``auth=`` the conformance adapter gives mcpfsm for each ``auth/*`` scenario of the official suite.

The suite's mock authorization servers auto-approve: ``GET /authorize`` answers ``302`` to the redirect URI
with ``code``, ``state`` and ``iss``, and nothing listens at the redirect URI. So the adapter's ``authorize``
is headless (the reference's A31): it GETs the authorization URL without following redirects and returns the
``Location`` unfetched, which is what a browser would have been sent to. Credentials the scenario hands out
come in ``MCP_CONFORMANCE_CONTEXT``; the redirect URI and the Client ID Metadata Document URL are the ones
the suite expects (``basic-cimd`` checks for exactly that client id; nobody serves the document).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import httpx

import mcpfsm

__all__ = ["CLIENT_METADATA_URL", "REDIRECT_URI", "auth_options", "headless_authorize"]

REDIRECT_URI: Final = "http://localhost:3000/callback"
CLIENT_METADATA_URL: Final = "https://conformance-test.local/client-metadata.json"


async def headless_authorize(url: str) -> str:
    """GET the authorization URL without following redirects; return where it redirects the user agent.

    Raises:
        mcpfsm.AuthorizationError: the authorization endpoint did not redirect.
    """
    async with httpx.AsyncClient(follow_redirects=False, timeout=30) as client:
        answer = await client.get(url)
    location = answer.headers.get("location")
    if not answer.is_redirect or location is None:
        raise mcpfsm.AuthorizationError(
            f"the authorization endpoint answered HTTP {answer.status_code}, not a redirect", state="authorizing"
        )
    return location


def _oauth(**extra: Any) -> mcpfsm.OAuth:
    return mcpfsm.OAuth(
        redirect_uri=REDIRECT_URI, authorize=headless_authorize, client_metadata_url=CLIENT_METADATA_URL, **extra
    )


def auth_options(scenario: str, context: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments for :meth:`mcpfsm.Client.http` of an ``auth/*`` scenario (``{}`` for others)."""
    if not scenario.startswith("auth/"):
        return {}
    name = scenario.removeprefix("auth/")
    auth: Any
    if name == "pre-registration":
        auth = _oauth(
            client_id=context["client_id"], client_secret=context["client_secret"], client_issuer=context["issuer"]
        )
    elif name == "client-credentials-basic":
        auth = mcpfsm.ClientCredentials(context["client_id"], client_secret=context["client_secret"])
    elif name == "client-credentials-jwt":
        auth = mcpfsm.ClientCredentials(
            context["client_id"],
            private_key_pem=context["private_key_pem"],
            signing_algorithm=context.get("signing_algorithm", "ES256"),
        )
    elif name == "enterprise-managed-authorization":
        auth = mcpfsm.EnterpriseManaged(
            context["client_id"],
            context["client_secret"],
            context["idp_client_id"],
            context["idp_id_token"],
            context["idp_token_endpoint"],
        )
    elif name == "wif-jwt-bearer":
        auth = mcpfsm.JwtBearer(context["client_id"], context["valid_jwt"])
    elif name in ("dpop", "dpop-nonce"):
        auth = _oauth(dpop=True)
    else:
        auth = _oauth()
    return {"auth": auth}

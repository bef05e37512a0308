"""What a server answers, and reading the JSON documents in it.

One :class:`Answer` per HTTP exchange of the flow (metadata GETs, registration, token endpoint); the
headers of a metadata GET (RFC 9728 §3.1, RFC 8414 §3.1); a JSON object out of a body (RFC 8259); the
OAuth error of an error answer (RFC 6749 §5.2).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from ..errors import AuthorizationError
from ..jsonrpc import holds_lone_surrogate

__all__ = [
    "LEGACY_METADATA_HEADERS",
    "METADATA_REQUEST_HEADERS",
    "Answer",
]


METADATA_REQUEST_HEADERS: Final[Mapping[str, str]] = MappingProxyType({"Accept": "application/json"})
"""Headers of every metadata GET (RFC 9728 §3.1, RFC 8414 §3.1); never an ``Authorization`` header."""

LEGACY_METADATA_HEADERS: Final[Mapping[str, str]] = MappingProxyType(
    {"Accept": "application/json", "MCP-Protocol-Version": "2025-03-26"}
)
"""Headers of the 2025-03-26 metadata GET, which that revision says should carry the protocol version."""


@dataclass(frozen=True, slots=True)
class Answer:
    """An authorization server's (or a metadata endpoint's) answer to one request, as the readers here take it.

    Attributes:
        status: the HTTP status (redirects are never followed, so a 3xx is an answer too).
        body: the body, whole.
        dpop_nonce: the ``DPoP-Nonce`` header, if any (RFC 9449 §8).
    """

    status: int
    body: bytes = field(repr=False)
    dpop_nonce: str | None = None


def _json_object(body: bytes) -> dict[str, Any] | None:
    # A document holding a lone UTF-16 surrogate is no Unicode text (RFC 8259 §8.2): none of its strings
    # could be sent on (in a URL, a form, a header), so it counts as no JSON object at all.
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(document, dict) or holds_lone_surrogate(document):
        return None
    return document


def _string_tuple(value: object) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    return None


def _raise_for_server_failure(status: int, what: str, state: str) -> None:
    if status == 429 or status >= 500 or status < 100:
        raise AuthorizationError(f"{what} answered HTTP {status}", state=state)


def _oauth_error(document: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    if document is None:
        return None, None
    error, description = document.get("error"), document.get("error_description")
    return (error if isinstance(error, str) else None, description if isinstance(description, str) else None)

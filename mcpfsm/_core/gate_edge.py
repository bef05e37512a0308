"""The gate's edge, around the verifier: who a caller is, and what a proxy frames itself (pure).

The verifier's own rules (the caps before decoding, the era, the hop-by-hop fields) are in
:mod:`mcpfsm._core.gate.request`; this module holds what the gate's I/O half adds:

- **identity** (:func:`identity_of`): who a private ``tools/list`` listing belongs to, as a SHA-256 fingerprint of
  the ``Authorization`` field (never the field itself);
- **framing** (:data:`FRAMED`): the request fields a proxy writes itself (RFC 9112 §3.2 ``Host``, §6
  ``Content-Length``; RFC 9110 §10.1.1 ``Expect`` is answered by the gate's own server; §6.6.2 ``Trailer``).

Header fields are ``(name, value)`` pairs of ``bytes`` as an ASGI server hands them over, names in lowercase.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Final

__all__ = ["FRAMED", "Fields", "field", "fingerprint", "identity_of"]

Fields = Sequence[tuple[bytes, bytes]]
"""Header fields as an ASGI scope holds them: ``(name, value)`` byte pairs, names in lowercase."""

FRAMED: Final = frozenset({b"host", b"content-length", b"expect", b"trailer"})
"""Request fields a proxy does not pass on: its connection to the upstream writes its own."""

_OWS: Final = b" \t"


def field(fields: Fields, name: bytes) -> bytes | None:
    """The value of the first field called ``name`` (lowercase), or ``None``."""
    for key, value in fields:
        if key == name:
            return value
    return None


def identity_of(fields: Fields) -> str | None:
    """A fingerprint of the request's ``Authorization`` field, or ``None`` without one.

    The SHA-256 of the field's value under a label of the gate's, in hex: the same in every gate (so a fleet
    shares private listings through a store), never the value itself. A fast digest on purpose: a slow one would let
    any client spend the gate's CPU by sending a new value with each request, and a bearer token is a long random
    secret that no one recovers from its digest.
    """
    return fingerprint(field(fields, b"authorization"))


def fingerprint(authorization: bytes | None) -> str | None:
    """:func:`identity_of` from the ``Authorization`` field's value (``None``: the request has none)."""
    if authorization is None:
        return None
    return hashlib.sha256(b"mcpfsm gate identity\n" + authorization.strip(_OWS)).hexdigest()

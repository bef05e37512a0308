"""Header value codec for ``Mcp-Param-*`` and ``Mcp-Name`` (SEP-2243).

Pure: no I/O. A value goes out as-is only when every character is visible ASCII or an interior
space, it is non-empty, has no leading or trailing space, and does not look like the Base64
sentinel. Everything else is sent as ``=?base64?`` + padded RFC 4648 Base64 of its UTF-8 bytes
+ ``?=``, so nothing outside 0x21-0x7E can start or end a header and nothing outside 0x20-0x7E
appears in it.

Decoding is the exact inverse of encoding on the encoder's image: ``decode(h)`` returns ``s``
when ``encode(s) == h`` and raises :class:`HeaderDecodeError` otherwise. A value with the
lowercase sentinel must carry canonical padded Base64 of valid UTF-8; a literal value must be one
the encoder would have sent literally. Being strict means a server reusing this decoder never
accepts two spellings of one value, which is what a header-matching check relies on.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Final

from .errors import HeaderDecodeError

__all__ = [
    "SENTINEL_PREFIX",
    "SENTINEL_SUFFIX",
    "decode_header_value",
    "decode_sentinel",
    "encode_header_value",
    "is_literal",
    "is_sentinel_shaped",
    "is_token",
]

SENTINEL_PREFIX = "=?base64?"
"""Lowercase marker opening a Base64-encoded header value."""
SENTINEL_SUFFIX = "?="
"""Marker closing a Base64-encoded header value."""

_TCHARS: Final = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def is_token(text: str) -> bool:
    """True when ``text`` is an RFC 9110 §5.6.2 token: the only characters a header name (or a method) may hold.

    The characters ``!#$%&'*+-.^_`|~``, digits and ASCII letters, one or more: checked without a pattern to
    compile at ``import mcpfsm``.
    """
    return bool(text) and not text.strip(_TCHARS)

# Compiled on first use (re keeps it): only decode_header_value reads it, which the client never calls.
_CANONICAL_B64: Final = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"


def is_literal(value: str) -> bool:
    """Tell whether ``value`` may be sent verbatim as a header value (SEP-2243)."""
    return (
        value != ""
        and value.isascii()
        # SEP-2243: for ASCII, isprintable() is exactly 0x20-0x7E, so TAB, CR, LF, NUL and DEL
        # anywhere force Base64.
        and value.isprintable()
        and value[0] != " "
        and value[-1] != " "
        # A literal that looks like the sentinel would be decoded by the receiver: encode it.
        and not is_sentinel_shaped(value)
    )


def is_sentinel_shaped(value: str) -> bool:
    """Tell whether ``value`` starts with ``=?base64?`` and ends with ``?=``, the two may overlap (SEP-2243)."""
    return value.startswith(SENTINEL_PREFIX) and value.endswith(SENTINEL_SUFFIX)


def decode_sentinel(header: str) -> str | None:
    """The text a sentinel-shaped ``header`` carries, or ``None`` when it carries none.

    ``None`` when the payload is not canonical padded Base64 (RFC 4648: the ``+/`` alphabet, ``=`` padding,
    zero padding bits) or its bytes are not UTF-8; also for ``=?base64?=``, whose markers overlap and so
    leave no payload, not even an empty one. Unlike :func:`decode_header_value` this accepts a payload the
    encoder would have sent literally (``=?base64?SGVsbG8=?=`` is ``Hello``): SEP-2243 lets a client encode any
    value and requires a receiver to decode it before comparing. Never raises.
    """
    raw = _sentinel_payload(header)
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _sentinel_payload(header: str) -> bytes | None:
    # The bytes of a sentinel-shaped header's canonical padded Base64 payload, or None.
    if len(header) < len(SENTINEL_PREFIX) + len(SENTINEL_SUFFIX) or not is_sentinel_shaped(header):
        # `=?base64?=`: prefix and suffix overlap, so there is no payload, not even an empty one.
        return None
    payload = header[len(SENTINEL_PREFIX) : len(header) - len(SENTINEL_SUFFIX)]
    if not re.match(_CANONICAL_B64, payload):
        return None
    try:
        raw = base64.b64decode(payload, validate=True)
    except binascii.Error:
        return None
    if base64.b64encode(raw).decode("ascii") != payload:
        # Non-zero padding bits: a second spelling of the same bytes.
        return None
    return raw


def encode_header_value(value: str) -> str:
    r"""Encode ``value`` for an ``Mcp-Param-*`` or ``Mcp-Name`` header (SEP-2243).

    Returns the value itself when it is safe as a header, else the Base64 sentinel form.

    Raises:
        UnicodeEncodeError: ``value`` holds a lone surrogate, which has no UTF-8 form (a JSON
            string can carry one as ``\\ud800``); planning reports it as a ``MirroringError``.
    """
    if is_literal(value):
        return value
    payload = base64.b64encode(value.encode("utf-8")).decode("ascii")
    return f"{SENTINEL_PREFIX}{payload}{SENTINEL_SUFFIX}"


def decode_header_value(header: str) -> str:
    """Decode a header value produced by :func:`encode_header_value`.

    Raises:
        HeaderDecodeError: the sentinel carries non-canonical or unpadded Base64, or bytes that
            are not UTF-8, or a value the encoder sends literally; or a literal value the
            encoder would have Base64-encoded (control or non-ASCII characters, edge spaces, empty).
    """
    if is_sentinel_shaped(header):
        raw = _sentinel_payload(header)
        if raw is None:
            raise HeaderDecodeError(f"header value {_short(header)} is not canonical padded Base64")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise HeaderDecodeError(f"header value {_short(header)} does not decode to UTF-8 text") from exc
        if is_literal(text):
            # The encoder would have sent this literally; two spellings of one value are refused.
            raise HeaderDecodeError(f"header value {_short(header)} encodes a value that is sent literally")
        return text
    if not is_literal(header):
        raise HeaderDecodeError(f"header value {_short(header)} must be Base64-encoded")
    return header


def _short(value: str) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."

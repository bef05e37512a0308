r"""The request body read once, and only when every reader would read it the same way (docs/gate.md).

Pure: no I/O. The gate verifies the body it parsed and forwards the bytes it received, so the two must be one
message for every reader after it: a body that one JSON reader reads one way and another reader another way
would let the gate verify one reading while the server acts on the other (a parser differential). So
:func:`read_json` refuses, before any rule is checked:

- a **duplicate member name** in any object (RFC 8259 §4: "the behavior of software that receives such an object
  is unpredictable"; Python keeps the last, many readers the first): -32600, naming the member's path;
- a **byte order mark** (RFC 8259 §8.1: "Implementations MUST NOT add a byte order mark"; some readers skip it,
  others refuse the body), **bytes that are not UTF-8**, and a ``\u`` escape of a **lone UTF-16 surrogate**
  (§8.2, "unpredictable"): -32700;
- **``NaN``, ``Infinity`` and ``-Infinity``**, which Python's ``json`` reads and JSON does not have: -32700;
- anything else that is not one JSON text (RFC 8259's grammar: no comment, no trailing comma), or nests deeper than
  :data:`MAX_DEPTH`: -32700.

Numbers are read exactly: an integer as an ``int`` (of at most 4,300 digits, Python's own bound), a number with a
fraction or an exponent as a :class:`jiter.LosslessFloat` that keeps its text, so that ``9007199254740990.9999``
is not taken for the integer a binary float rounds it to (:func:`lossless_decimal`).

The reader is jiter (pydantic's JSON parser, in Rust): strict RFC 8259, duplicate names caught while parsing,
and faster than ``json.loads`` with them (``bench/gate_verify.py``). Python's ``json`` is used only to explain a
refusal (which member is duplicated, where), never on a request the gate forwards.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any, Final

import jiter

from ..constants import INVALID_REQUEST, PARSE_ERROR

__all__ = ["MAX_DEPTH", "Unreadable", "lossless_decimal", "read_json"]

MAX_DEPTH: Final = 200
"""The deepest nesting of arrays and objects the gate reads (jiter's bound); a deeper body is refused."""

_BOM: Final = b"\xef\xbb\xbf"
_DUPLICATE: Final = "Detected duplicate key"
_NOT_JSON: Final = "the body is not UTF-8 JSON"
_MAX_SEGMENT: Final = 64
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")


class Unreadable(Exception):
    """The body is refused before any rule is checked: ``code`` (-32700 or -32600) and ``reason``, quoting no value."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(code, reason)
        self.code = code
        self.reason = reason


def read_json(body: bytes | str) -> Any:
    """The one JSON text ``body`` holds, read as every reader reads it (see the module's description).

    A ``str`` body is read as its UTF-8 encoding. Objects are ``dict``, arrays ``list``, numbers ``int`` or
    :class:`jiter.LosslessFloat`.

    Raises:
        Unreadable: the body is refused; the reason names what, and where for a duplicate member, never a value.
    """
    if type(body) is not bytes:
        body = _encoded(body)
    try:
        return jiter.from_json(body, allow_inf_nan=False, catch_duplicate_keys=True, float_mode="lossless-float")
    except ValueError as exc:
        raise _refusal(body, str(exc)) from None


def lossless_decimal(value: object) -> Decimal | None:
    """The exact value of a number :func:`read_json` read with a fraction or an exponent; ``None`` for another value."""
    if type(value) is jiter.LosslessFloat:
        return value.as_decimal()
    return None


def _encoded(body: object) -> bytes:
    if isinstance(body, str):
        try:
            return body.encode("utf-8")
        except UnicodeEncodeError:  # a surrogate code point: no Unicode text
            raise Unreadable(PARSE_ERROR, "the body holds a lone UTF-16 surrogate, which is no Unicode text") from None
    if isinstance(body, bytearray | memoryview):
        return bytes(body)
    raise Unreadable(PARSE_ERROR, _NOT_JSON)


def _refusal(body: bytes, error: str) -> Unreadable:
    # Why jiter refused the body, in words a client can act on. The error path only: it may parse again.
    if body.startswith(_BOM):
        return Unreadable(PARSE_ERROR, "the body starts with a byte order mark (RFC 8259 §8.1: JSON text has none)")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return Unreadable(PARSE_ERROR, _NOT_JSON)
    if error.startswith(_DUPLICATE):
        path = _duplicated(text)
        where = f"the member {path}" if path is not None else "a member"
        return Unreadable(
            INVALID_REQUEST,
            f"the body holds {where} twice: readers differ on which one counts (RFC 8259 §4), so it is refused",
        )
    if "escape" in error and _SURROGATE_ESCAPE.search(text) is not None:
        return Unreadable(PARSE_ERROR, "a string in the body escapes a lone UTF-16 surrogate, which is no Unicode text")
    try:
        json.loads(text, parse_constant=_constant)
    except _Constant:
        return Unreadable(PARSE_ERROR, "the body holds NaN or Infinity, which JSON does not have (RFC 8259 §6)")
    except (ValueError, RecursionError):
        pass
    else:
        if "recursion" in error:
            return Unreadable(PARSE_ERROR, f"the body nests arrays and objects deeper than {MAX_DEPTH} levels")
    return Unreadable(PARSE_ERROR, _NOT_JSON)


class _Constant(ValueError):
    pass


def _constant(name: str) -> Any:
    raise _Constant(name)


class _Pairs(list[tuple[str, Any]]):
    # An object as Python's json read it, every member kept in order (duplicates included).
    pass


def _duplicated(text: str) -> str | None:
    # The JSON pointer (RFC 6901) of the first member whose name repeats in its object, in document order.
    try:
        value = json.loads(text, object_pairs_hook=_Pairs)
    except (ValueError, RecursionError):
        return None
    pending: list[tuple[tuple[str, ...], Any]] = [((), value)]
    while pending:
        path, item = pending.pop()
        if isinstance(item, _Pairs):
            seen: set[str] = set()
            for name, _ in item:
                if name in seen:
                    return _pointer((*path, name))
                seen.add(name)
            pending.extend(((*path, name), member) for name, member in reversed(item))
        elif isinstance(item, list):
            pending.extend(((*path, str(index)), member) for index, member in reversed(list(enumerate(item))))
    return None


def _pointer(path: tuple[str, ...]) -> str:
    # A JSON pointer for a message: each name escaped to printable ASCII (json's escapes) and cut at 64 characters.
    segments = []
    for name in path:
        shown = json.dumps(name.replace("~", "~0").replace("/", "~1"))[1:-1]
        segments.append(shown if len(shown) <= _MAX_SEGMENT else shown[:_MAX_SEGMENT] + "…")
    return "/" + "/".join(segments)

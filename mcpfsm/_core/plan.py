"""Header plans: the protocol headers one request carries (SEP-2243).

Pure: no I/O. :func:`plan_request` turns a method, its params, the negotiated protocol version
and a tool's mirrored parameters into a frozen, hashable :class:`HeaderPlan`. Plans compare as
sets of (case-insensitive name, value) pairs, so reordering a schema never looks like a change
(SEP-2243).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

from .codec import encode_header_value
from .constants import NAME_PARAM, is_modern
from .errors import MirroringError
from .schema import MirroredParam, json_pointer

__all__ = ["HeaderPlan", "mirror_value", "plan_request"]

_MAX_SAFE_INTEGER: Final = 2**53 - 1
# Plans already made (a plan is an immutable value, and a client sends the same few again and again), by
# (version, method, name, mirrored params, the argument values they mirror). Only values of exact types
# (str, bool, int) up to _MAX_CACHED_TEXT characters make a key; any other input is planned afresh.
# Bounded: cleared when full.
_PLANS: dict[tuple[Any, ...], tuple[Sequence[MirroredParam], HeaderPlan]] = {}
_MAX_PLANS: Final = 1024
_MAX_CACHED_TEXT: Final = 256
_CACHEABLE: Final = frozenset({str, bool, int})
_NAME_PARAM: Final = dict(NAME_PARAM)  # a plain dict: a mapping proxy's get is a method call of its own


class HeaderPlan:
    """The protocol headers of one request, each at most once, in sending order.

    Equality and hashing ignore order and header-name case, so two plans are equal exactly when
    they would put the same (name, value) pairs on the wire (SEP-2243).
    """

    __slots__ = ("_dict", "_headers", "_key", "mapping")
    _dict: dict[str, str]
    _headers: tuple[tuple[str, str], ...]
    _key: frozenset[tuple[str, str]]
    mapping: Mapping[str, str]
    """The plan as a read-only ``{name: value}`` mapping, the same object every time (no copy)."""

    def __init__(self, headers: Iterable[tuple[str, str]] = ()) -> None:
        """Build a plan from (name, value) pairs.

        Raises:
            ValueError: a header name appears twice (case-insensitively).
        """
        pairs = tuple(headers)
        key = frozenset([(name.lower(), value) for name, value in pairs])
        if len(key) != len(pairs) or len({name for name, _ in key}) != len(pairs):
            raise ValueError(f"header plan names a header twice: {[n for n, _ in pairs]}")
        # Past __setattr__, which refuses every assignment once the plan is built.
        object.__setattr__(self, "_headers", pairs)
        # What as_dict copies (a dict's copy costs a third of building one from the pairs); never handed out.
        object.__setattr__(self, "_dict", dict(pairs))
        # Hot path (bench/repeatable.py): a plan is cached and sent again and again; one read-only view of it serves
        # every request and event that carries it, instead of a copy each.
        object.__setattr__(self, "mapping", MappingProxyType(self._dict))
        object.__setattr__(self, "_key", key)

    @property
    def headers(self) -> tuple[tuple[str, str], ...]:
        """The (name, value) pairs in sending order."""
        return self._headers

    def as_dict(self) -> dict[str, str]:
        """The plan as a plain ``{name: value}`` dict (for events and transports), the caller's own."""
        return self._dict.copy()

    def __iter__(self) -> Iterator[tuple[str, str]]:
        """Iterate the (name, value) pairs in sending order."""
        return iter(self._headers)

    def __len__(self) -> int:
        """Number of headers in the plan."""
        return len(self._headers)

    def __eq__(self, other: object) -> bool:
        """Equal when both carry the same (case-insensitive name, value) pairs."""
        if not isinstance(other, HeaderPlan):
            return NotImplemented
        return self._key == other._key

    def __hash__(self) -> int:
        """Hash consistent with :meth:`__eq__`."""
        return hash(self._key)

    def __repr__(self) -> str:
        """Show the headers in order."""
        return f"HeaderPlan({dict(self._headers)!r})"

    def __setattr__(self, name: str, value: object) -> None:
        """Refuse mutation after construction: plans are frozen values."""
        if hasattr(self, "_key"):
            raise AttributeError("HeaderPlan is immutable")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        """Refuse deletion: plans are frozen values."""
        raise AttributeError("HeaderPlan is immutable")


def plan_request(
    method: str,
    params: Mapping[str, Any] | None,
    *,
    protocol_version: str | None,
    mirrored: Sequence[MirroredParam] = (),
) -> HeaderPlan:
    """Compute the protocol headers for one request (SEP-2243).

    Modern era: ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name`` for the three name-bearing
    methods, and one ``Mcp-Param-*`` per mirrored argument present (tools/call only). Legacy era
    after ``initialize``: ``MCP-Protocol-Version`` only. ``protocol_version=None`` (before the
    legacy handshake completes): no headers.

    Raises:
        MirroringError: ``params.name``/``params.uri`` or a mirrored argument cannot be mirrored.
    """
    if protocol_version is None:
        return HeaderPlan()
    key = _key(method, params, protocol_version, mirrored)
    if key is not None:
        known = _PLANS.get(key)
        # The mirrored params are keyed by identity (a tool definition's tuple): the same object, not a lookalike.
        if known is not None and known[0] is mirrored:
            return known[1]
    if not is_modern(protocol_version):
        # Legacy era after initialize (kept too: the key names the version).
        plan = HeaderPlan((("MCP-Protocol-Version", protocol_version),))
    else:
        plan = _plan(method, params, protocol_version, mirrored)
    if key is not None:
        if len(_PLANS) >= _MAX_PLANS:
            _PLANS.clear()
        _PLANS[key] = (mirrored, plan)
    return plan


def _key(
    method: str, params: Mapping[str, Any] | None, protocol_version: str, mirrored: Sequence[MirroredParam]
) -> tuple[Any, ...] | None:
    # What a modern plan depends on, or None when an input is not cacheable (then it is planned afresh).
    name: object = None
    name_key = _NAME_PARAM.get(method)
    if name_key is not None and params is not None:
        name = params.get(name_key)
        if type(name) is not str or len(name) > _MAX_CACHED_TEXT:
            return None
    if not mirrored or method != "tools/call" or params is None:
        return protocol_version, method, name, id(mirrored)
    arguments = params.get("arguments")
    values: list[object] = [protocol_version, method, name, id(mirrored)]
    for param in mirrored:
        value: object = arguments
        for segment in param.path:
            if type(value) is not dict:
                return None
            value = value.get(segment)
            if value is None:
                break
        if value is not None:
            kind = type(value)
            if kind not in _CACHEABLE or (kind is str and len(value) > _MAX_CACHED_TEXT):  # type: ignore[arg-type]
                return None
            values.append(kind)
        values.append(value)
    return tuple(values)


def _plan(
    method: str, params: Mapping[str, Any] | None, protocol_version: str, mirrored: Sequence[MirroredParam]
) -> HeaderPlan:
    headers: list[tuple[str, str]] = [("MCP-Protocol-Version", protocol_version), ("Mcp-Method", method)]
    name_key = NAME_PARAM.get(method)
    if name_key is not None and params is not None:
        name = params.get(name_key)
        if not isinstance(name, str):
            raise MirroringError(
                f"params.{name_key} of {method} must be a string to go into Mcp-Name, got {_kind(name)}",
                path=(name_key,),
                header="Mcp-Name",
                declared_type="string",
            )
        headers.append(("Mcp-Name", _encode(name, (name_key,), "Mcp-Name")))
    if method == "tools/call" and mirrored and params is not None:
        arguments = params.get("arguments")
        for param in mirrored:
            value = mirror_value(param, arguments)
            if value is not None:
                headers.append((param.header, value))
    return HeaderPlan(headers)


def mirror_value(param: MirroredParam, arguments: object) -> str | None:
    """The header text for ``param`` taken from ``arguments``, or ``None`` when absent (SEP-2243).

    The value is looked up along ``param.path``; a missing key, a ``null`` on the path or a
    non-object parent means no header.

    Raises:
        MirroringError: the value does not fit the declared type, is out of range, or cannot be
            encoded; the message names the argument path, the header and the declared type.
    """
    value: object = arguments
    for segment in param.path:
        # A plain dict first: the ABC check is ten times slower, and arguments are nearly always dicts.
        if type(value) is not dict and not isinstance(value, Mapping):
            return None
        value = value.get(segment)
        if value is None:
            return None
    declared = param.type
    if declared == "boolean":
        if isinstance(value, bool):
            return "true" if value else "false"
        raise _mismatch(param, f"expected a boolean, got {_kind(value)}")
    if declared == "integer":
        # bool is a subclass of int: True must never become "1".
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _mismatch(param, f"expected an integer, got {_kind(value)}")
        if isinstance(value, float):
            if not math.isfinite(value):
                raise _mismatch(param, f"expected an integer, got {_kind(value)}")
            if not value.is_integer():
                raise _mismatch(param, f"expected an integer, got non-integral {_kind(value)}")
            value = int(value)
        if abs(value) > _MAX_SAFE_INTEGER:
            raise _mismatch(param, f"integer {value} is outside the safe range ±(2**53 - 1)")
        # int.__repr__ and str.__str__: a subclass overriding __str__ cannot smuggle text into a header.
        return int.__repr__(int(value))
    if isinstance(value, str):
        return _encode(str.__str__(value), param.path, param.header)
    raise _mismatch(param, f"expected a string, got {_kind(value)}")


def _encode(value: str, path: tuple[str, ...], header: str) -> str:
    try:
        return encode_header_value(value)
    except UnicodeEncodeError as exc:
        raise MirroringError(
            f"argument {json_pointer(path)} cannot be mirrored into {header} (declared string):"
            " the string holds a lone surrogate and has no UTF-8 form",
            path=path,
            header=header,
            declared_type="string",
        ) from exc


def _mismatch(param: MirroredParam, why: str) -> MirroringError:
    return MirroringError(
        f"argument {param.pointer} cannot be mirrored into {param.header} (declared {param.type}): {why}",
        path=param.path,
        header=param.header,
        declared_type=param.type,
    )


def _kind(value: object) -> str:
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{type(value).__name__} {text}"

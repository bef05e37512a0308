"""The request as the gate reads it: its ``Mcp-*`` headers read once, its body parsed once.

Pure: no I/O. :meth:`McpHeaders.read` makes one pass over the header list as received (``(name, value)`` pairs of
``str``, or of ``bytes`` as ASGI gives them, duplicates kept) and keeps the ``Mcp-*`` ones; :func:`parse_request`
reads a body into a :class:`ParsedRequest` or says why it is no JSON-RPC request. The middleware and the proxy
hand both to :func:`~mcpfsm._core.gate.verify.check`, so a body is parsed once however many rules read it.

The defence that comes before any decoding (431, 413), the era a request is judged in, and the headers a proxy
never forwards (RFC 9110 §7.6.1) are rules of this module too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from ..constants import INVALID_REQUEST, LEGACY_VERSIONS, NAME_PARAM, PARSE_ERROR, PROTOCOL_VERSION_KEY
from .body import Unreadable, read_json
from .outcomes import Verdict

__all__ = [
    "DEFAULT_MAX_BODY",
    "HOP_BY_HOP",
    "LEGACY_REQUEST_VERSIONS",
    "MAX_MCP_HEADERS",
    "MAX_MCP_HEADER_BYTES",
    "HeaderPairs",
    "McpHeaders",
    "ParsedRequest",
    "end_to_end",
    "name_param",
    "parse_request",
    "without_params",
]

HeaderPairs = Iterable[tuple[str | bytes, str | bytes]]
"""Headers as received: ``(name, value)`` pairs of ``str`` (or of ``bytes``, read as Latin-1, as ASGI gives them)."""

MAX_MCP_HEADERS: Final = 64
"""The most header lines whose name starts with ``mcp-`` (any case; the standard ones count) a request may carry."""
MAX_MCP_HEADER_BYTES: Final = 8192
"""The longest value, in bytes, such a header may carry."""
DEFAULT_MAX_BODY: Final = 4 * 1024 * 1024
"""The default bound on a request body (4 MiB); a longer one is answered 413 before it is parsed."""

LEGACY_REQUEST_VERSIONS: Final = frozenset({*LEGACY_VERSIONS, "2024-11-05"})
"""``MCP-Protocol-Version`` values of the eras before per-request headers: such a request is not verified."""

HOP_BY_HOP: Final = frozenset({"connection", "keep-alive", "te", "transfer-encoding", "upgrade", "proxy-connection"})
"""RFC 9110 §7.6.1: headers meant for one connection; a proxy drops them and every header ``Connection`` names."""

_PARAM_PREFIX: Final = "mcp-param-"
_MCP: Final = frozenset({"mcp-", b"mcp-"})
# Tuples, not unions: isinstance against `str | bytes` builds the union on every call (bench/gate_verify.py).
_TEXTS: Final = (str, bytes, bytearray)
_BINARY: Final = (bytes, bytearray)
_OWS: Final = " \t"
_NO_VALUES: Final[tuple[str, ...]] = ()


def _text(value: object) -> str | None:
    # A header name or value as text: str as it is, bytes as Latin-1 (every byte maps to one character, as ASGI's
    # and WSGI's servers read them); anything else is no header.
    if isinstance(value, str):
        return value
    if isinstance(value, _BINARY):
        return bytes(value).decode("latin-1")
    return None


class McpHeaders:
    """The ``Mcp-*`` headers of one request, read once from the list as received.

    Args:
        values: each header whose lowercased name starts with ``mcp-``, by that lowercased name, with its values in
            the order received, optional whitespace around each trimmed (RFC 9110 §5.5).
        count: how many such header lines the request carried.
        longest: the length in bytes of the longest such value, before trimming.
        malformed: an entry of the list was not a ``(name, value)`` pair of strings or bytes.

    :meth:`read` makes one; a request whose fields an ASGI server gave in the usual form (one field per name, names
    in lowercase, within the caps) is read lazily from the fields themselves (:meth:`of_fields`): a value is
    decoded when a rule asks for it (``bench/gate.py``).
    """

    __slots__ = ("_count", "_fields", "_longest", "_values", "_version", "malformed", "repeated")

    def __init__(
        self, *, values: Mapping[str, tuple[str, ...]], count: int = 0, longest: int = 0, malformed: bool = False
    ) -> None:
        """The headers as :meth:`read` found them (the general reading)."""
        self._fields: Mapping[bytes, bytes] | None = None
        self._values: Mapping[str, tuple[str, ...]] | None = values
        self._count = count
        self._longest = longest
        self._version: object = _UNREAD
        self.malformed = malformed
        """An entry of the list was not a ``(name, value)`` pair of strings or bytes."""
        self.repeated = count > len(values)
        """Some ``Mcp-*`` header came more than once."""

    def __repr__(self) -> str:
        return (
            f"McpHeaders(values={dict(self.values)!r}, count={self.count}, longest={self.longest},"
            f" malformed={self.malformed})"
        )

    @classmethod
    def read(cls, headers: HeaderPairs) -> McpHeaders:
        """Read the ``Mcp-*`` headers of ``headers``; never raises, whatever the list holds."""
        if type(headers) is list and len(headers) <= MAX_MCP_HEADERS:
            try:
                named = dict(headers)
            except (TypeError, ValueError):
                pass
            else:
                quick = cls.of_fields(headers, named)
                if quick is not None:
                    return quick
        return cls._read(headers)

    @classmethod
    def of_fields(cls, fields: Sequence[tuple[bytes, bytes]], named: Mapping[bytes, bytes]) -> McpHeaders | None:
        """The headers of ``fields`` read lazily, when they are in the usual form; else ``None`` (use :meth:`read`).

        ``named`` is ``dict(fields)``. The usual form: byte pairs, no more than :data:`MAX_MCP_HEADERS` fields, one
        per name, names in lowercase, no value longer than :data:`MAX_MCP_HEADER_BYTES`. Then nothing repeats and no
        cap can be exceeded, and C does the looking (the hot path, ``bench/gate.py``).
        """
        if len(fields) > MAX_MCP_HEADERS or len(named) != len(fields):
            return None
        try:
            if not b"".join(named).islower():  # bytes names (a TypeError says not), all in lowercase
                return None
            # All the values together within the cap: each one is (one join; max() with default= costs more).
            if len(b"".join(named.values())) > MAX_MCP_HEADER_BYTES and max(map(len, named.values())) > (
                MAX_MCP_HEADER_BYTES
            ):
                return None
        except (TypeError, ValueError):
            return None
        # Bytes-like is not enough: a memoryview has no decode.
        if not all(map(_BYTES.__instancecheck__, named.values())):
            return None
        read = cls.__new__(cls)
        read._fields = named
        read._values = None
        read._count = read._longest = -1
        read._version = _UNREAD
        read.malformed = read.repeated = False
        return read

    @property
    def values(self) -> Mapping[str, tuple[str, ...]]:
        """Each ``Mcp-*`` header by its lowercased name, with its trimmed values in the order received."""
        values = self._values
        if values is None:
            assert self._fields is not None
            found = {
                name.decode("latin-1"): (value.decode("latin-1").strip(_OWS),)
                for name, value in self._fields.items()
                if name[:4] == b"mcp-"
            }
            values = self._values = MappingProxyType(found)
        return values

    @property
    def count(self) -> int:
        """How many ``Mcp-*`` header lines the request carried."""
        if self._count < 0:
            self._count = len(self.values)
        return self._count

    @property
    def longest(self) -> int:
        """The length in bytes of the longest ``Mcp-*`` value, before trimming."""
        if self._longest < 0:
            assert self._fields is not None
            self._longest = max((len(v) for n, v in self._fields.items() if n[:4] == b"mcp-"), default=0)
        return self._longest

    def one(self, name: str) -> str | None:
        """The first value of header ``name`` (given in lowercase), trimmed; ``None`` when absent."""
        fields = self._fields
        if fields is None:
            assert self._values is not None
            sent = self._values.get(name)
            return None if sent is None else sent[0]
        try:
            key = _KEYS[name]
        except KeyError:
            key = name.encode("latin-1", "replace")
            if len(_KEYS) < _MAX_KEYS:
                _KEYS[name] = key
        raw = fields.get(key)
        return None if raw is None else raw.decode("latin-1").strip(_OWS)

    @classmethod
    def _read(cls, headers: HeaderPairs) -> McpHeaders:
        values: dict[str, list[str]] = {}
        count = longest = 0
        malformed = False
        try:
            entries = iter(headers)
        except TypeError:
            return cls(values=MappingProxyType({}), malformed=True)
        for entry in entries:
            # A name's first four characters decide before anything is decoded; only Mcp-* values are read.
            try:
                raw_name, raw_value = entry
                prefix = raw_name[:4].lower()
            except Exception:  # not a pair, or a name that is neither str nor bytes: no header
                malformed = True
                continue
            if prefix != b"mcp-" and prefix != "mcp-":
                if not isinstance(prefix, _TEXTS) or not isinstance(raw_value, _TEXTS):
                    malformed = True
                continue
            if type(raw_value) is bytes:
                size = len(raw_value)
                value = raw_value.decode("latin-1")
            elif type(raw_value) is str:
                value = raw_value
                size = len(value) if value.isascii() else _utf8_size(value)
            elif isinstance(raw_value, bytearray):
                size = len(raw_value)
                value = raw_value.decode("latin-1")
            else:
                malformed = True
                continue
            name = raw_name.decode("latin-1") if type(raw_name) is bytes else _text(raw_name)
            if name is None:
                malformed = True
                continue
            count += 1
            if size > longest:
                longest = size
            values.setdefault(name.lower(), []).append(value.strip(_OWS))
        frozen = {name: tuple(each) for name, each in values.items()}
        return cls(values=MappingProxyType(frozen), count=count, longest=longest, malformed=malformed)

    def get(self, name: str) -> tuple[str, ...]:
        """The trimmed values of header ``name`` (any case), in the order received; ``()`` when absent."""
        return self.values.get(name.lower(), _NO_VALUES)

    @property
    def protocol_version(self) -> str | None:
        """The one ``MCP-Protocol-Version`` value, trimmed; ``None`` when the header is absent or sent twice."""
        # Read once per request: the era and the check both ask (bench/gate.py).
        version = self._version
        if version is _UNREAD:
            if not self.repeated:
                version = self.one("mcp-protocol-version")
            else:
                sent = self.get("mcp-protocol-version")
                version = sent[0] if len(sent) == 1 else None
            self._version = version
        return version  # type: ignore[return-value]

    @property
    def legacy(self) -> bool:
        """True for a request of an era before per-request headers: no ``MCP-Protocol-Version``, or a legacy one.

        Such a request is not verified; every other one is, an unknown or repeated version included, so
        no value of the header lets a request skip verification.
        """
        version = self.protocol_version
        if version is not None:
            return version in LEGACY_REQUEST_VERSIONS
        return not self.repeated or not self.get("mcp-protocol-version")

    @property
    def param_names(self) -> tuple[str, ...]:
        """The lowercased names of the ``Mcp-Param-*`` headers the request carried."""
        return tuple(name for name in self.values if name.startswith(_PARAM_PREFIX))

    def limit_exceeded(self) -> str | None:
        """Why the request breaks the header limits (answered 431 before any decoding), or ``None``.

        At most :data:`MAX_MCP_HEADERS` ``Mcp-*`` header lines and at most :data:`MAX_MCP_HEADER_BYTES` bytes in
        each value, both inclusive. The reason names the limit, never a header's value.
        """
        if self._fields is not None:
            return None  # read lazily only when within both caps
        if self.count > MAX_MCP_HEADERS:
            return f"the request carries {self.count} Mcp-* headers; at most {MAX_MCP_HEADERS} are accepted"
        if self.longest > MAX_MCP_HEADER_BYTES:
            return f"an Mcp-* header value is longer than {MAX_MCP_HEADER_BYTES} bytes"
        return None


_UNREAD: Final = object()
_KEYS: dict[str, bytes] = {}
_MAX_KEYS: Final = 4096
_BYTES: Final = bytes


def _utf8_size(value: str) -> int:
    return len(value.encode("utf-8", "surrogatepass"))


def name_param(method: str) -> str | None:
    """The params member ``Mcp-Name`` mirrors for ``method``, or ``None`` for a method that names nothing.

    ``name`` for ``tools/call`` and ``prompts/get``, ``uri`` for ``resources/read`` (SEP-2243), ``taskId`` for
    ``tasks/*`` (SEP-2663).
    """
    key = NAME_PARAM.get(method)
    if key is None and method.startswith("tasks/"):
        return "taskId"
    return key


_ABSENT: Final = object()


@dataclass(slots=True, kw_only=True)
class ParsedRequest:
    """A JSON-RPC request or notification, parsed once from the body (read it, do not change it).

    Attributes:
        method: the body's ``method``.
        id: the request's ``id`` (``None`` for a notification).
        params: the body's ``params`` (``{}`` when absent or ``null``).
        notification: the body has no ``id``.
    """

    method: str
    id: int | str | None
    params: Mapping[str, Any] = field(default_factory=dict, repr=False)  # the body's values stay out of a repr
    notification: bool = False

    @property
    def name_key(self) -> str | None:
        """The params member ``Mcp-Name`` mirrors (:func:`name_param`), or ``None``."""
        return name_param(self.method)

    @property
    def name(self) -> object:
        """The value ``Mcp-Name`` mirrors, as the body holds it (any JSON value), or ``None`` (absent or null)."""
        key = self.name_key
        return None if key is None else self.params.get(key)

    @property
    def tool(self) -> str | None:
        """The called tool's name: ``params.name`` of a ``tools/call`` when it is a string, else ``None``."""
        name = self.params.get("name") if self.method == "tools/call" else None
        return name if isinstance(name, str) else None

    @property
    def arguments(self) -> object:
        """``params.arguments`` as the body holds it, or ``None``."""
        return self.params.get("arguments")

    @property
    def carries_version(self) -> bool:
        """The body's ``params._meta`` carries a protocol version member (any value, ``null`` included)."""
        meta = self.params.get("_meta")
        return isinstance(meta, Mapping) and PROTOCOL_VERSION_KEY in meta

    @property
    def protocol_version(self) -> object:
        """The body's ``params._meta`` protocol version (any JSON value), or ``None`` when absent."""
        meta = self.params.get("_meta")
        return meta.get(PROTOCOL_VERSION_KEY) if isinstance(meta, Mapping) else None


def parse_request(body: bytes | str) -> ParsedRequest | Verdict:
    """Parse a request body once: a :class:`ParsedRequest`, or a :class:`Verdict` saying why it is none.

    The body must be one JSON text that every reader reads the same way (:func:`~mcpfsm._core.gate.body.read_json`:
    UTF-8 without a byte order mark, no duplicate member name, no ``NaN``, no lone surrogate) holding one JSON-RPC 2.0
    request or notification: an object with ``"jsonrpc": "2.0"``, a string ``method``, ``params`` an object (or
    absent or ``null``) and, for a request, an ``id`` that is a string or an integer. Else the verdict is not ok,
    with code -32700 (not JSON) or -32600 (a duplicate member; not a request: a batch, a response, another value).
    Never raises.
    """
    try:
        payload = read_json(body)
    except Unreadable as refused:
        return Verdict.malformed(refused.code, refused.reason)
    except Exception:  # totality's backstop: read_json refuses every body it cannot read with Unreadable
        return Verdict.malformed(PARSE_ERROR, "the body is not UTF-8 JSON")
    if type(payload) is not dict:
        return Verdict.malformed(INVALID_REQUEST, "the body is not a JSON-RPC request object")
    if payload.get("jsonrpc") != "2.0":
        return Verdict.malformed(INVALID_REQUEST, 'the body lacks "jsonrpc": "2.0"')
    method = payload.get("method")
    if type(method) is not str:
        return Verdict.malformed(INVALID_REQUEST, "the body has no string method")
    params = payload.get("params")
    if params is None:
        params = {}
    elif type(params) is not dict:
        return Verdict.malformed(INVALID_REQUEST, "the body's params is not an object")
    request_id = payload.get("id", _ABSENT)
    if request_id is _ABSENT:
        return ParsedRequest(method=method, id=None, params=params, notification=True)
    if type(request_id) is not int and type(request_id) is not str:  # bool is no id (JSON true is no integer)
        return Verdict.malformed(INVALID_REQUEST, "the body's id is neither a string nor an integer")
    return ParsedRequest(method=method, id=request_id, params=params)


def end_to_end(headers: Sequence[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``headers`` without the hop-by-hop ones (RFC 9110 §7.6.1): what a proxy forwards.

    Dropped: ``Connection`` and every header it names, ``Keep-Alive``, ``TE``, ``Transfer-Encoding``, ``Upgrade``
    and ``Proxy-Connection``, in any case.
    """
    named: set[bytes] = set()
    for name, value in headers:
        if name.lower() == b"connection":
            named.update(token.strip().lower() for token in value.split(b","))
    dropped = {name.encode("ascii") for name in HOP_BY_HOP} | named
    return [(name, value) for name, value in headers if name.lower() not in dropped]


def without_params(headers: Sequence[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``headers`` without any ``Mcp-Param-*`` header (any case): a legacy request with ``legacy="strip"``."""
    prefix = _PARAM_PREFIX.encode("ascii")
    return [(name, value) for name, value in headers if not name.lower().startswith(prefix)]

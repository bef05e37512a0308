"""HTTP/1.1 framing for the client side of one connection (RFC 9112), sans-I/O.

Pure: no I/O. :func:`encode_request` turns one request into the bytes to send (head and body
together, so a request is one write); :class:`ResponseReader` turns the bytes a connection
receives into one response head and the pieces of its body, and says whether the connection may
carry another request afterwards. ``mcpfsm._transports.pool`` drives both over trio sockets.

Only what an MCP client needs: requests with a ``Content-Length`` body (or none), responses framed
by ``Content-Length``, ``Transfer-Encoding: chunked`` or the end of the connection; 1xx interim
responses are skipped; a 2xx answer to ``CONNECT`` (a proxy tunnel) ends with its head. Anything
else a server sends raises :class:`H1Error`, never hangs: ambiguous framing (``Content-Length``
with ``Transfer-Encoding``) included, and bytes after a complete response make the connection
not reusable (:attr:`ResponseReader.reusable`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Final, NamedTuple

from .codec import is_token

__all__ = [
    "MAX_HEAD_BYTES",
    "H1Error",
    "ResponseHead",
    "ResponseReader",
    "encode_request",
    "connection_header_problem",
    "field_problem",
    "request_prefix",
]

MAX_HEAD_BYTES: Final = 64 * 1024
"""The largest response head (status line and header fields) accepted, in bytes."""

# RFC 9110 §5.1 token and §5.5 field-value (visible ASCII, inner SP/HTAB): nothing a caller passes
# can end a header line early or smuggle a second header in.
_FIELD_VALUE: Final = re.compile(r"(?:[\x21-\x7e](?:[\t\x20-\x7e]*[\x21-\x7e])?)?")
_TARGET: Final = re.compile(r"[\x21-\x7e]+")
# The connection layer frames the body itself (RFC 9112 §6): a caller's framing header would
# contradict it.
_FRAMING: Final = frozenset({"content-length", "transfer-encoding"})
_CONNECTION_OWNED: Final = frozenset({*_FRAMING, "te", "trailer", "upgrade"})
_HEAD_END: Final = re.compile(rb"\r?\n\r?\n")
_LINE_END: Final = re.compile(rb"\r?\n")
_STATUS_LINE: Final = re.compile(r"HTTP/1\.([0-9]) ([0-9]{3})(?: ([^\x00-\x08\x0a-\x1f\x7f]*))?")
_CHUNK_SIZE: Final = re.compile(rb"[0-9A-Fa-f]{1,16}")
_CONTENT_LENGTH: Final = re.compile(r"[0-9]{1,18}")
_MAX_CHUNK_LINE: Final = 4096
# The usual head, checked in one pass: CRLF lines of `token ":" value`, the value free of CR, LF and NUL.
# Anything else (bare LF, obsolete folding, a malformed line) goes through the line-by-line parser,
# which decides and says what is wrong.
_STRICT_FIELDS: Final = re.compile(r"(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+:[^\r\n\x00]*\r\n)*")
# Header lines already checked, by (name, value): a client sends the same few again and again; and
# status lines already parsed. Both bounded. A credential (a token, a cookie, a DPoP proof, a session id) or a
# long value is never remembered, nor a caller's fixed headers (an API key among them: request_prefix checks
# them once per pool, which keeps the prefix): this cache is the process's, and outlives the client.
_CHECKED_LINES: dict[tuple[str, str], str] = {}
_MAX_CHECKED_LINES: Final = 1024
_MAX_CHECKED_LINE: Final = 256
_NEVER_REMEMBERED: Final = frozenset({"authorization", "proxy-authorization", "cookie", "dpop", "mcp-session-id"})
_STATUS_LINES: dict[str, tuple[int, int, str]] = {}
_MAX_STATUS_LINES: Final = 64
# Heads already parsed, by their bytes (status line and fields; what they mean for framing is worked out
# again for each response, as it depends on the request too). Bounded, and only heads of up to 1 KiB that set
# no cookie and carry no session id or challenge.
_HEADS: dict[bytes, tuple[tuple[int, int, str], dict[str, str]]] = {}
_MAX_HEADS: Final = 64
# Of those, the ones that answered a request of a method with a Content-Length body, by (bytes, method): the head
# with its fields read-only (shared by every response with those bytes) and the body's length. Hot path
# (bench/repeatable.py): the usual answer's framing is then worked out once, not for each response.
_FRAMED: dict[tuple[bytes, str], tuple[ResponseHead, int]] = {}
_MAX_CACHED_HEAD: Final = 1024
_PRIVATE_FIELDS: Final = frozenset({"mcp-session-id", "www-authenticate", "dpop-nonce", "authentication-info"})
_NO_BODY_STATUS: Final = frozenset({204, 304})
_OWS: Final = " \t"


class H1Error(Exception):
    """A request that cannot be written, or a response that breaks HTTP/1.1 framing."""


class ResponseHead(NamedTuple):
    """The status line and header fields of one final (non-1xx) response.

    Attributes:
        status: the status code.
        reason: the reason phrase (may be empty).
        headers: header fields by lowercase name; a repeated field's values are joined with ``", "``.
        keep_alive: HTTP/1.1 without ``Connection: close``, and a body whose end is framed, so the
            connection may carry another request once the body is read.
        set_cookie: each ``Set-Cookie`` field value on its own, in order: the one field whose values cannot
            be joined (RFC 9110 §5.3, RFC 6265 §3: an ``Expires`` date holds a comma).
    """

    status: int
    reason: str
    headers: Mapping[str, str]
    keep_alive: bool
    set_cookie: tuple[str, ...] = ()

    def __repr__(self) -> str:
        """The status and framing; never the header fields or cookies (they may carry credentials)."""
        return f"ResponseHead(status={self.status!r}, reason={self.reason!r}, keep_alive={self.keep_alive!r})"


def encode_request(
    method: str,
    target: str,
    host: str,
    headers: Sequence[tuple[str, str]],
    body: bytes = b"",
    *,
    prefix: str | None = None,
) -> bytes:
    """The bytes of one HTTP/1.1 request: request line, ``Host``, ``headers``, ``Content-Length``, body.

    ``Content-Length`` is sent for a non-empty body and always for ``POST``. A ``Host`` among
    ``headers`` replaces the default ``host``. ``prefix``, from :func:`request_prefix` for the same
    method, target and host, stands for the request line, ``Host`` and the headers it was made with,
    which then come before ``headers``.

    Raises:
        H1Error: a header name is not a token, a value holds anything but visible ASCII with inner
            spaces and tabs, a header is ``Content-Length`` or ``Transfer-Encoding``, or the
            method or target is malformed.
    """
    if prefix is None:
        prefix = request_prefix(method, target, host, ())
    lines = [prefix]
    checked = _CHECKED_LINES
    for pair in headers:
        line = checked.get(pair)
        if line is None:
            line = _checked_line(pair)
            if line is None:
                # A Host header: it replaces the Host line of the prefix, so the head is made whole.
                return _with_host(method, prefix, headers, body)
        lines.append(line)
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}\r\n")
    lines.append("\r\n")
    return "".join(lines).encode("ascii") + body


def request_prefix(method: str, target: str, host: str, headers: Sequence[tuple[str, str]]) -> str:
    """The request line, ``Host`` and ``headers`` of a request, checked as :func:`encode_request` checks them.

    A connection sends the same few heads again and again: made once, a prefix is reused by
    :func:`encode_request` for every request with these fixed headers, and only the others are checked.

    Raises:
        H1Error: as :func:`encode_request`.
    """
    if not is_token(method) or not _TARGET.fullmatch(target):
        raise H1Error(f"malformed request line {method!r} {target!r}")
    lines = [f"{method} {target} HTTP/1.1\r\n", f"Host: {host}\r\n"]
    for name, value in headers:
        line = _CHECKED_LINES.get((name, value)) or _checked_line((name, value), remember=False)
        if line is None:
            lines[1] = f"{name}: {value}\r\n"
            continue
        lines.append(line)
    return "".join(lines)


def _checked_line(pair: tuple[str, str], *, remember: bool = True) -> str | None:
    # The header line of `pair` once checked (remembered, bounded, unless `remember` is False), or None for a
    # Host header.
    name, value = pair
    if not is_token(name):
        raise H1Error(f"header name {name!r} is not an HTTP token")
    if not _FIELD_VALUE.fullmatch(value):
        raise H1Error(_unsendable(name))
    lowered = name.lower()
    if lowered in _FRAMING:
        raise H1Error(f"header {name} is set by the connection, not by the caller")
    if lowered == "host":
        return None
    line = f"{name}: {value}\r\n"
    if not remember or lowered in _NEVER_REMEMBERED or len(line) > _MAX_CHECKED_LINE:
        return line
    checked = _CHECKED_LINES
    if len(checked) >= _MAX_CHECKED_LINES:
        checked.clear()
    checked[pair] = line
    return line


def _with_host(method: str, prefix: str, headers: Sequence[tuple[str, str]], body: bytes) -> bytes:
    # A Host among the headers after a prefix: the prefix's lines, then the headers, the last Host in place.
    lines = [line + "\r\n" for line in prefix.split("\r\n")[:-1]]
    for pair in headers:
        line = _CHECKED_LINES.get(pair) or _checked_line(pair)
        if line is None:
            lines[1] = f"{pair[0]}: {pair[1]}\r\n"
        else:
            lines.append(line)
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}\r\n")
    lines.append("\r\n")
    return "".join(lines).encode("ascii") + body


def field_problem(name: object, value: object) -> str | None:
    """Why ``name: value`` cannot be sent as a header field (RFC 9110 §5.1, §5.5), or ``None`` when it can.

    The reason names the header and never quotes its value: values are often credentials (a token read
    from a file with its trailing newline, an API key with a stray character).
    """
    if not isinstance(name, str) or not is_token(name):
        return f"header name {name!r} is not an HTTP token"
    if not isinstance(value, str) or not _FIELD_VALUE.fullmatch(value):
        return _unsendable(name)
    return None


def connection_header_problem(name: object) -> str | None:
    """Why a caller may not set header ``name``: the connection layer owns it; ``None`` when the caller may.

    ``Content-Length`` and ``Transfer-Encoding`` frame the body (RFC 9112 §6), ``TE`` and ``Trailer`` the
    chunked trailer section (RFC 9110 §10.1.4, §6.6.2), ``Upgrade`` switches protocols (RFC 9110 §7.8):
    one given by the caller would contradict the request the connection writes, or the answer it can read,
    so every request would fail. ``Host`` and ``Connection`` stay the caller's to set.
    """
    if not isinstance(name, str) or name.lower() not in _CONNECTION_OWNED:
        return None
    return (
        f"header {name} is set by the connection, not by the caller (headers= may not carry Content-Length,"
        " Transfer-Encoding, TE, Trailer or Upgrade)"
    )


def _unsendable(name: str) -> str:
    # Never the value itself (docs/authorization.md: no token in an error message).
    return (
        f"header {name} has a value that cannot be sent as an HTTP field"
        " (visible ASCII with inner spaces or tabs only; the value is not shown)"
    )


class ResponseReader:
    """Reads one response from the bytes of a connection (RFC 9112 §2-§7).

    Give it everything received with :meth:`receive` (``b""`` for the end of the connection), call
    :meth:`read_head` until it returns the head, then :meth:`read_body` until it returns ``None``.
    Both return "need more bytes" instead of blocking: ``None`` from :meth:`read_head`, ``b""``
    from :meth:`read_body`.

    Args:
        request_method: the method of the request being answered (a ``HEAD`` answer has no body).
        max_head_bytes: the largest head accepted.
    """

    __slots__ = (
        "_buffer",
        "_chunked",
        "_eof",
        "_head",
        "_max_head",
        "_method",
        "_remaining",
        "_state",
        "received",
    )

    def __init__(self, request_method: str = "POST", *, max_head_bytes: int = MAX_HEAD_BYTES) -> None:
        """Prepare to read the response to a ``request_method`` request."""
        self._buffer = bytearray()
        self._method = request_method
        self._max_head = max_head_bytes
        self._eof = False
        self._head: ResponseHead | None = None
        self._chunked = False
        # Bytes left in a Content-Length body or in the current chunk; None: until the connection ends.
        self._remaining: int | None = 0
        # Chunked decoding: "size", "data", "crlf", "trailer"; "done" once the body has ended.
        self._state = "size"
        self.received = 0
        """Bytes received so far (0: the server has not started to answer)."""

    def receive(self, data: bytes | bytearray) -> None:
        """Add received bytes; ``b""`` means the server closed its side of the connection."""
        if data:
            self._buffer += data
            self.received += len(data)
        else:
            self._eof = True

    @property
    def unread(self) -> int:
        """Bytes received and not yet returned (after a CONNECT tunnel opened: bytes that came too early)."""
        return len(self._buffer)

    def leftover(self) -> tuple[bytes, bool]:
        """``(bytes received after the response, whether the connection ended)``; the buffer is emptied.

        The bytes belong to the next response on the connection.
        """
        rest = bytes(self._buffer)
        self._buffer.clear()
        return rest, self._eof

    @property
    def missing(self) -> int:
        """Bytes of a ``Content-Length`` body not received yet; 0 for any other body, or before the head."""
        if self._head is None or self._chunked or self._state != "data" or self._remaining is None or self._eof:
            return 0
        return max(self._remaining - len(self._buffer), 0)

    @property
    def done(self) -> bool:
        """True once the whole body has been returned by :meth:`read_body`."""
        return self._state == "done"

    @property
    def reusable(self) -> bool:
        """True when the response ended cleanly and the connection may carry another request."""
        return (
            self._state == "done"
            and self._head is not None
            and self._head.keep_alive
            and not self._eof
            and not self._buffer
        )

    def read_head(self) -> ResponseHead | None:
        """The head of the final response once it is complete, else ``None`` (need more bytes).

        Raises:
            H1Error: the head is malformed or too large, a ``101`` arrived, or the connection ended
                before the head was complete.
        """
        while self._head is None:
            buffer = self._buffer
            end = _head_end(buffer)
            if end is None:
                if len(buffer) > self._max_head:
                    raise H1Error(f"the response head is larger than {self._max_head} bytes")
                if self._eof:
                    if not buffer:
                        raise H1Error("the server closed the connection without answering")
                    raise H1Error("the server closed the connection in the middle of the response head")
                return None
            start, stop = end
            if start > self._max_head:
                raise H1Error(f"the response head is larger than {self._max_head} bytes")
            raw = bytes(buffer[:start])
            del buffer[:stop]
            head = self._parse_head(raw)
            if head is not None:
                self._head = head
        return self._head

    def _parse_head(self, raw: bytes) -> ResponseHead | None:
        known = _HEADS.get(raw)
        if known is not None:
            # The same bytes as a head parsed before (a server answers alike within the second of its Date).
            framed = _FRAMED.get((raw, self._method))
            if framed is not None:
                self._remaining, self._state = framed[1], "data"
                return framed[0]
            head = self._head_of(known[0], known[1].copy(), [])
            remaining = self._remaining
            if head is not None and not self._chunked and self._state == "data" and remaining:
                if len(_FRAMED) >= _MAX_HEADS:
                    _FRAMED.clear()
                shared = head._replace(headers=MappingProxyType(head.headers))
                _FRAMED[(raw, self._method)] = (shared, remaining)
            return head
        text = raw.decode("latin-1")
        status_line, _, fields = text.partition("\r\n")
        if fields:
            fields += "\r\n"
        if "\n" in status_line or not _STRICT_FIELDS.fullmatch(fields):
            return self._parse_lines(_LINE_END.split(raw))
        status = _status(status_line)
        headers: dict[str, str] = {}
        cookies: list[str] = []
        # Every line is `token ":" value` (checked above): a split is all that is left to do.
        for line in fields[:-2].split("\r\n") if fields else ():
            name, _, value = line.partition(":")
            name = name.lower()
            value = value.strip(_OWS)
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
            if name == "set-cookie":
                cookies.append(value)
        if len(raw) <= _MAX_CACHED_HEAD and not cookies and _PRIVATE_FIELDS.isdisjoint(headers):
            # Not a head that sets cookies, names a session or challenges: what it carries is kept nowhere but
            # in the client it came to (this cache is the process's).
            if len(_HEADS) >= _MAX_HEADS:
                _HEADS.clear()
                _FRAMED.clear()
            _HEADS[raw] = (status, headers.copy())
        return self._head_of(status, headers, cookies)

    def _parse_lines(self, lines: list[bytes]) -> ResponseHead | None:
        # Line by line: bare LF line ends, obsolete line folding, and the error that names a malformed line.
        status = _status(lines[0].decode("latin-1"))
        headers: dict[str, str] = {}
        cookies: list[str] = []
        name = ""
        for raw in lines[1:]:
            line = raw.decode("latin-1")
            if line[:1] in (" ", "\t"):
                # RFC 9112 §5.2: a user agent replaces an obsolete line folding with a space.
                if not name:
                    raise H1Error("malformed HTTP/1.1 header block: a folded line comes first")
                headers[name] = (headers[name] + " " + line.strip(_OWS)).strip(_OWS)
                if name == "set-cookie":
                    cookies[-1] = (cookies[-1] + " " + line.strip(_OWS)).strip(_OWS)
                continue
            name, colon, value = line.partition(":")
            # The value is never quoted: it may be a cookie, a session id or a challenge.
            if not colon:
                raise H1Error("malformed HTTP/1.1 header line: no colon")
            if not is_token(name):
                raise H1Error(f"malformed HTTP/1.1 header line: the field name {name[:40]!r} is not a token")
            name = name.lower()
            value = value.strip(_OWS)
            if "\r" in value or "\x00" in value:
                raise H1Error(f"malformed HTTP/1.1 header line: the value of {name!r} holds CR or NUL")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
            if name == "set-cookie":
                cookies.append(value)
        return self._head_of(status, headers, cookies)

    def _head_of(
        self, status_line: tuple[int, int, str], headers: dict[str, str], cookies: list[str]
    ) -> ResponseHead | None:
        minor, status, reason = status_line
        if 100 <= status < 200:
            if status == 101:
                raise H1Error("the server switched protocols (HTTP 101), which this client never asks for")
            return None  # an interim response: the final one follows on the same connection
        connection = headers.get("connection")
        keep_alive = minor >= 1 and (connection is None or "close" not in _tokens(connection))
        self._frame(status, headers)
        if self._remaining is None:
            keep_alive = False
        return ResponseHead(status, reason, headers, keep_alive, tuple(cookies))

    def _frame(self, status: int, headers: dict[str, str]) -> None:
        # RFC 9112 §6.3, in its order.
        if self._method == "HEAD" or status in _NO_BODY_STATUS or (self._method == "CONNECT" and status < 300):
            # A 2xx to CONNECT turns the connection into a tunnel right after the head.
            self._remaining, self._state = 0, "done"
            return
        coding = headers.get("transfer-encoding")
        if coding is not None and "content-length" in headers:
            # RFC 9112 §6.3: both at once may be request smuggling or response splitting and "ought to
            # be handled as an error"; the connection is closed, never reused.
            raise H1Error("the response has both Content-Length and Transfer-Encoding (RFC 9112 §6.3)")
        if coding is not None:
            if _tokens(coding) != ["chunked"]:
                raise H1Error(f"unsupported Transfer-Encoding {coding!r} (only chunked is understood)")
            self._chunked, self._state = True, "size"
            return
        length = headers.get("content-length")
        if length is None:
            self._remaining, self._state = None, "data"
            return
        if 0 < len(length) <= 18 and length.isascii() and length.isdigit():
            # The usual single value; anything else is checked below.
            self._remaining = int(length)
            self._state = "data" if self._remaining else "done"
            return
        values = {value.strip(_OWS) for value in length.split(",")}
        if len(values) != 1 or not _CONTENT_LENGTH.fullmatch(next(iter(values))):
            raise H1Error(f"malformed Content-Length {length!r}")
        self._remaining = int(values.pop())
        self._state = "data" if self._remaining else "done"

    def read_body(self) -> bytes | None:
        """The next piece of the body; ``b""`` when more bytes are needed; ``None`` once it has ended.

        Raises:
            H1Error: malformed chunked framing, or the connection ended before the body did.
        """
        if self._head is None:
            raise H1Error("read_body() before the response head")
        if self._state == "done":
            return None
        if self._chunked:
            return self._read_chunked()
        buffer = self._buffer
        remaining = self._remaining
        if remaining is None:
            if buffer:
                piece = bytes(buffer)
                buffer.clear()
                return piece
            if self._eof:
                self._state = "done"
                return None
            return b""
        if buffer:
            if len(buffer) <= remaining:
                piece = bytes(buffer)
                buffer.clear()
            else:
                piece = bytes(buffer[:remaining])
                del buffer[:remaining]
            self._remaining = remaining = remaining - len(piece)
            if not remaining:
                self._state = "done"
            return piece
        if self._eof:
            raise H1Error("the server closed the connection in the middle of the response body")
        return b""

    def whole_body(self) -> bytes | None:
        """The whole of a ``Content-Length`` body once all of it has been received, else ``None``.

        What :meth:`read_body` returns piece by piece, in one step when it can be: the body is then read. With
        ``None``, nothing is taken.
        """
        remaining = self._remaining
        if self._head is None or self._chunked or self._state != "data" or remaining is None:
            return None
        buffer = self._buffer
        if len(buffer) < remaining:
            return None
        if len(buffer) == remaining:
            piece = bytes(buffer)
            buffer.clear()
        else:
            piece = bytes(buffer[:remaining])
            del buffer[:remaining]
        self._remaining = 0
        self._state = "done"
        return piece

    def _read_chunked(self) -> bytes | None:
        buffer = self._buffer
        while True:
            state = self._state
            if state == "data":
                if not buffer:
                    break
                remaining = self._remaining or 0
                piece = bytes(buffer[:remaining])
                del buffer[:remaining]
                self._remaining = remaining - len(piece)
                if not self._remaining:
                    self._state = "crlf"
                return piece
            if state == "crlf":
                if buffer[:2] == b"\r\n":
                    del buffer[:2]
                elif buffer[:1] == b"\n":
                    del buffer[:1]
                elif not buffer or (len(buffer) == 1 and buffer[0] == 0x0D):
                    break
                else:
                    raise H1Error("malformed chunked body: a chunk does not end with CRLF")
                self._state = "size"
                continue
            if state == "done":
                return None
            newline = buffer.find(b"\n")
            if newline < 0:
                if len(buffer) > _MAX_CHUNK_LINE:
                    raise H1Error("malformed chunked body: a chunk size or trailer line is too long")
                break
            line = bytes(buffer[:newline]).rstrip(b"\r")
            del buffer[: newline + 1]
            if state == "trailer":
                # Trailer fields carry nothing an MCP client uses; a blank line ends the body.
                if not line:
                    self._state = "done"
                    return None
                continue
            size = line.partition(b";")[0].strip(b" \t")
            if not _CHUNK_SIZE.fullmatch(size):
                raise H1Error(f"malformed chunked body: bad chunk size line {line[:40]!r}")
            self._remaining = int(size, 16)
            self._state = "data" if self._remaining else "trailer"
        if self._eof:
            raise H1Error("the server closed the connection in the middle of the response body")
        return b""


def _head_end(buffer: bytearray) -> tuple[int, int] | None:
    # Where the head ends: the first line break followed by an empty line, CRLF or bare LF (RFC 9112 §2.2),
    # as (start of that line break, end of the empty line). The same as `_HEAD_END.search`, found with
    # two byte searches instead of the regular expression.
    crlf = buffer.find(b"\n\r\n")
    lf = buffer.find(b"\n\n", 0, None if crlf < 0 else crlf + 1)
    if lf >= 0:
        first, stop = lf, lf + 2
    elif crlf >= 0:
        first, stop = crlf, crlf + 3
    else:
        return None
    return (first - 1 if first and buffer[first - 1] == 0x0D else first), stop


def _status(line: str) -> tuple[int, int, str]:
    # (minor version, status code, reason phrase) of a status line.
    known = _STATUS_LINES.get(line)
    if known is not None:
        return known
    match = _STATUS_LINE.fullmatch(line)
    if match is None or int(match[2]) < 100:
        raise H1Error(f"malformed HTTP/1.1 status line {line[:100]!r}")
    parsed = int(match[1]), int(match[2]), match[3] or ""
    if len(_STATUS_LINES) >= _MAX_STATUS_LINES:
        _STATUS_LINES.clear()
    _STATUS_LINES[line] = parsed
    return parsed


def _tokens(value: str) -> list[str]:
    return [token.strip(_OWS).lower() for token in value.split(",") if token.strip(_OWS)]

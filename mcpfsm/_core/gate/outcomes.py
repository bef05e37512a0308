"""What the gate gives out: a :class:`Verdict`, a :class:`VerifiedCall` for the policy, a :class:`Refusal` to answer.

Pure values (MCP 2026-07-28, Streamable HTTP, "Server Validation"; docs/gate.md). A verdict's ``reason`` names the
header and what differed and never quotes a value: a header value may be a tenant, a path or a secret, and a reason
goes to the client, the log and the audit trail.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from ..constants import HEADER_MISMATCH, INVALID_REQUEST
from ..jsonrpc import encode_error

__all__ = [
    "OK",
    "GateRefusal",
    "ParamValue",
    "Refusal",
    "Verdict",
    "VerifiedCall",
]

ParamValue = str | int | bool
"""A verified ``Mcp-Param-*`` value: ``str`` for a string parameter, ``int`` and ``bool`` for the other two types."""

_NONE: Final[Mapping[str, ParamValue]] = MappingProxyType({})


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """Whether a request's headers say what its body says (:func:`mcpfsm.gate.verify`).

    Attributes:
        ok: ``True`` when every recognized header matches the body.
        header: the offending header's name (``Mcp-Param-`` and the annotation's token, case as declared, for a
            parameter), or ``None``: the request is fine, or its body is no JSON-RPC request at all.
        reason: ``None`` when ``ok``; else what differed, in one sentence naming the header, never its value.
        code: ``None`` when ``ok``; else the JSON-RPC error code to answer with: -32020 (HeaderMismatch) for a
            header, -32700 for a body that is not JSON, -32600 for JSON that is no request.
        params: when ``ok``, every declared ``Mcp-Param-*`` header the request carried, by its declared name, with
            its decoded value (``int`` and ``bool`` for integer and boolean parameters); empty otherwise. Not in the
            verdict's repr, which quotes no value either.
    """

    ok: bool
    header: str | None = None
    reason: str | None = None
    code: int | None = None
    # Left out of the repr: a verdict may reach a log line, and its values are the caller's (a tenant, a path).
    params: Mapping[str, ParamValue] = field(default_factory=lambda: _NONE, repr=False)

    @classmethod
    def mismatch(cls, header: str, reason: str) -> Verdict:
        """A header that does not match the body: -32020, ``reason`` naming ``header``."""
        return cls(ok=False, header=header, reason=reason, code=HEADER_MISMATCH)

    @classmethod
    def malformed(cls, code: int, reason: str) -> Verdict:
        """A body that is no JSON-RPC request (``code`` -32700 or -32600): no header to blame."""
        return cls(ok=False, header=None, reason=reason, code=code)


OK: Final = Verdict(ok=True)
"""The verdict of a request that carries no declared ``Mcp-Param-*`` header and matches everywhere."""


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifiedCall:
    """A modern request the gate verified, as the ``policy=`` callable sees it (docs/gate.md).

    Only verified values are here: a parameter whose schema is unknown, or whose header was absent, is not.

    Attributes:
        method: the JSON-RPC method (``Mcp-Method``).
        name: the tool or prompt name, resource URI or task id (``Mcp-Name``, decoded), or ``None`` for a method
            that names nothing.
        params: the declared header name (``Mcp-Param-`` and the annotation's token, case as declared) -> the
            decoded value; ``int`` and ``bool`` for integer and boolean parameters.
        identity: a fingerprint of the caller's ``Authorization`` header (never the header), or ``None``.
    """

    method: str
    name: str | None = None
    params: Mapping[str, ParamValue] = field(default_factory=lambda: _NONE)
    identity: str | None = None


class GateRefusal(Exception):
    """Raised by a ``policy=`` callable to refuse a verified call: nothing is forwarded.

    The gate answers with HTTP ``status`` and a JSON-RPC error (-32600) carrying ``message`` and the request's
    ``id``. The message goes to the client as written: it should not quote what the call carried.

    Args:
        status: the HTTP status, 400 to 599.
        message: what the client is told.

    Raises:
        ValueError: ``status`` is not an HTTP error status, or ``message`` is not a string.
    """

    def __init__(self, status: int, message: str) -> None:
        if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
            raise ValueError(f"GateRefusal status must be an HTTP error status (400 to 599), got {status!r}")
        if not isinstance(message, str):
            raise ValueError(f"GateRefusal message must be a string, got {type(message).__name__}")
        super().__init__(status, message)
        self.status = status
        self.message = message

    def __str__(self) -> str:
        return f"{self.status}: {self.message}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Refusal:
    """How the gate answers a request it does not forward: an HTTP status and a JSON-RPC error.

    Attributes:
        status: the HTTP status (400, 413, 431, or a policy's own).
        code: the JSON-RPC error code.
        message: the error's message (never a header value).
        id: the request's JSON-RPC ``id``, or ``None`` when it has none or was never read.
        header: the header at fault, or ``None``.
    """

    status: int
    code: int
    message: str
    id: int | str | None = None
    header: str | None = None

    @classmethod
    def of_verdict(cls, verdict: Verdict, request_id: int | str | None) -> Refusal:
        """The answer to a request whose verdict is not ok: HTTP 400 (MCP 2026-07-28, "Server Validation").

        Raises:
            ValueError: ``verdict`` is ok.
        """
        if verdict.ok or verdict.code is None or verdict.reason is None:
            raise ValueError("an ok verdict refuses nothing")
        message = f"Header mismatch: {verdict.reason}" if verdict.code == HEADER_MISMATCH else verdict.reason
        return cls(status=400, code=verdict.code, message=message, id=request_id, header=verdict.header)

    @classmethod
    def of_policy(cls, refusal: GateRefusal, request_id: int | str | None) -> Refusal:
        """The answer to a call a policy refused: its status, -32600 and its message."""
        return cls(status=refusal.status, code=INVALID_REQUEST, message=refusal.message, id=request_id)

    def body(self) -> bytes:
        """The JSON-RPC error response, UTF-8 (``Content-Type: application/json``)."""
        return encode_error(self.id, self.code, self.message).encode("utf-8")

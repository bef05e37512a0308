"""A stand-in for the verifier until the gatecore branch lands (deleted at that merge). Pure."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .codec import decode_header_value
from .schema import inspect_input_schema

__all__ = ["GateRefusal", "Verdict", "VerifiedCall", "verify"]


@dataclass(frozen=True, slots=True)
class Verdict:
    ok: bool
    header: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifiedCall:
    method: str
    name: str | None
    params: Mapping[str, Any] = field(default_factory=dict)
    identity: str | None = None


class GateRefusal(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def verify(headers: Sequence[tuple[str, str]], body: bytes, schema: Mapping[str, Any] | None) -> Verdict:
    fields: dict[str, list[str]] = {}
    for name, value in headers:
        fields.setdefault(name.lower(), []).append(value.strip(" \t"))
    for values in fields.values():
        if len(values) > 1:
            return Verdict(False, "dup", "duplicate")
    try:
        message = json.loads(body)
    except ValueError:
        return Verdict(True)
    if not isinstance(message, dict):
        return Verdict(True)
    method = message.get("method")
    if fields.get("mcp-method", [None])[0] != method:
        return Verdict(False, "Mcp-Method", "Mcp-Method differs from the body's method")
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    if method == "tools/call":
        try:
            name = decode_header_value(fields.get("mcp-name", [""])[0])
        except ValueError:
            return Verdict(False, "Mcp-Name", "malformed")
        if name != params.get("name"):
            return Verdict(False, "Mcp-Name", "Mcp-Name differs from params.name")
        if schema is not None:
            arguments = params.get("arguments") or {}
            for mirrored in inspect_input_schema(schema).mirrored:
                value: Any = arguments
                for part in mirrored.path:
                    value = value.get(part) if isinstance(value, dict) else None
                header = fields.get(mirrored.header.lower(), [None])[0]
                if value is None:
                    if header is not None:
                        return Verdict(False, mirrored.header, "present without argument")
                    continue
                if header is None:
                    return Verdict(False, mirrored.header, "absent")
                try:
                    decoded = decode_header_value(header)
                except ValueError:
                    return Verdict(False, mirrored.header, "malformed")
                expected = value if isinstance(value, str) else json.dumps(value)
                if decoded != expected:
                    return Verdict(False, mirrored.header, f"{mirrored.header} differs from the argument")
    return Verdict(True)

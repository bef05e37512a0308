"""The event of the gate machine: one :class:`GateEvent` per state a request through ``mcpfsm.gate`` enters.

Imported with the gate machine (specs/gate.md, docs/gate.md) or the first record read of it. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from . import CallEvent, common_fields

__all__ = ["GateEvent"]


@dataclass(frozen=True, slots=True, kw_only=True)
class GateEvent(CallEvent):
    """A request through ``mcpfsm.gate`` entered one state of the gate machine (specs/gate.md, docs/gate.md).

    The first event of a run is ``received``; the last is ``forwarded``, ``reported``, ``rejected`` or ``cancelled``.
    The fields of :class:`CallEvent` mean the same here, with ``call_id`` naming this run, ``tool`` the called tool
    (``""`` for any other request), ``attempt`` always 1, ``headers`` always ``None`` and ``round`` always 0. No
    header value is ever recorded: ``name`` is the body's, and a reason names a header and what differed.

    Attributes:
        method: the body's JSON-RPC method, once the body is parsed (``""`` before, and for a legacy or malformed
            body).
        name: the body's tool or prompt name, resource URI or task id (what ``Mcp-Name`` mirrors), or ``None``.
        header: on ``rejected`` and ``reported``, the header at fault, or ``None`` (a refusal that blames none).
        reason: on ``rejected`` and ``reported``, what was wrong, naming the header, never quoting a value.
        status: on ``rejected``, the HTTP status of the gate's answer (400, 413, 431, or a policy's own).
    """

    MACHINE: ClassVar[str] = "gate"
    machine: str = MACHINE
    method: str = ""
    name: str | None = None
    header: str | None = None
    reason: str | None = None
    status: int | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GateEvent:
        """Rebuild an event from :meth:`to_dict` output.

        Raises:
            ValueError: a field is missing or has the wrong type.
        """
        try:
            status = data.get("status")
            if status is not None and (isinstance(status, bool) or not isinstance(status, int)):
                raise ValueError("status is not an integer")
            return GateEvent(
                **common_fields(data),
                method=str(data.get("method", "")),
                name=None if data.get("name") is None else str(data["name"]),
                header=None if data.get("header") is None else str(data["header"]),
                reason=None if data.get("reason") is None else str(data["reason"]),
                status=status,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a GateEvent record: {exc}") from exc

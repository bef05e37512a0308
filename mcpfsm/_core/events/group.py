"""The event of the group machine: one :class:`MemberEvent` per change of a client group member's status.

Imported with the group machine (specs/group.md, docs/groups.md: a client group's members) or the first record
read of it. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from . import CallEvent, common_fields

__all__ = ["MemberEvent"]


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberEvent(CallEvent):
    """A member of a :class:`~mcpfsm.ClientGroup` changed status (docs/groups.md, specs/group.md).

    One event per change, on the group's ``on_event`` and ``events()`` channels: ``state`` and :attr:`status` are
    the new status (``"idle"``, ``"connecting"``, ``"connected"``, ``"failed"``, ``"disabled"``), ``previous`` the
    old one, ``trigger`` what changed it (``opened``, ``used``, ``connected``, ``refused``, ``exited``, ``broke``,
    ``retried``, ``reconnected``, ``removed``), ``server`` the member. The fields of :class:`CallEvent` mean the
    same here, except: ``call_id`` is ``None`` (a member's events are told apart by ``server``), ``seq`` counts
    the group's member events (0, 1, 2, … over every member), ``tool`` is ``""``, ``attempt`` counts the
    member's connects so far, ``elapsed`` is seconds since the group opened, ``error`` is set on ``failed`` (the
    error :attr:`ClientGroup.errors <mcpfsm.ClientGroup.errors>` holds), and ``headers`` is ``None``.
    """

    MACHINE: ClassVar[str] = "group"
    machine: str = MACHINE
    call_id: str | None = None  # type: ignore[assignment]  # a member's events belong to no call
    tool: str = ""
    attempt: int = 0
    status: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemberEvent:
        """Rebuild an event from :meth:`to_dict` output.

        Raises:
            ValueError: a field is missing or has the wrong type.
        """
        try:
            if data.get("call_id") is not None:
                raise ValueError("a member event belongs to no call (call_id must be null)")
            read = {**common_fields({**data, "call_id": ""}), "call_id": None}
            return MemberEvent(**read, status=str(data.get("status", data["state"])))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a MemberEvent record: {exc}") from exc

"""The event of the authorization machine: one :class:`AuthEvent` per state a flow enters (docs/authorization.md).

Imported with the authorization machine (the first ``auth=`` flow) or the first record read of it. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from . import CallEvent, common_fields

__all__ = ["AuthEvent"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthEvent(CallEvent):
    """The fact that one authorization flow entered one state (docs/authorization.md).

    The fields of :class:`CallEvent` mean the same here, with ``call_id`` naming the flow, ``tool`` the tool
    whose call drew the challenge (``""`` for any other request), ``attempt`` 1 for the first flow a request
    starts and 2 for a step-up after it, ``headers`` always ``None`` and ``round`` always 0 (with no input
    fields). Nothing secret is ever recorded.

    Attributes:
        issuer: the authorization server's issuer, once chosen.
        resource: the protected resource identifier (the ``resource`` parameter), once known.
        scopes: the scopes requested or held, in order.
    """

    MACHINE: ClassVar[str] = "authorization"

    machine: str = MACHINE
    issuer: str | None = None
    resource: str | None = None
    scopes: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AuthEvent:
        """Rebuild an event from :meth:`to_dict` output.

        Raises:
            ValueError: a field is missing or has the wrong type.
        """
        try:
            scopes = data.get("scopes") or []
            if not isinstance(scopes, list) or not all(isinstance(scope, str) for scope in scopes):
                raise ValueError("scopes is not a list of strings")
            return AuthEvent(
                **common_fields(data),
                issuer=None if data.get("issuer") is None else str(data["issuer"]),
                resource=None if data.get("resource") is None else str(data["resource"]),
                scopes=tuple(scopes),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not an AuthEvent record: {exc}") from exc

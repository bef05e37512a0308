"""The rules one gate applies, checked once when it is built (docs/gate.md).

Pure: no I/O. :class:`GateSettings` holds the options of ``HeaderGate`` and of ``mcpfsm gate`` that decide what
happens to a request (the run of the gate machine reads them); the options that say where things are (the app,
the upstream, the store, the schemas file) belong to the shapes that do the I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

from .outcomes import VerifiedCall
from .request import DEFAULT_MAX_BODY

__all__ = ["DEFAULT_LEARN_TTL", "GateSettings", "Legacy", "Mode", "OnUnknown", "Policy"]

Mode = Literal["verify", "report"]
"""``"verify"`` refuses a mismatch (400, -32020); ``"report"`` forwards it and counts it (a rollout mode)."""
OnUnknown = Literal["fetch", "pass", "reject"]
"""What a call to a tool with no known schema gets: a ``tools/list`` first, the standard checks only, or 400."""
Legacy = Literal["strip", "pass", "reject"]
"""What a request of a legacy era gets: forwarded without ``Mcp-Param-*``, forwarded as it is, or 400 (-32600)."""
Policy = Callable[[VerifiedCall], object]
"""A ``policy=`` hook: called (and awaited, when it returns an awaitable) with each verified call; it may raise
:class:`~mcpfsm.gate.GateRefusal`."""

DEFAULT_LEARN_TTL: Final = 3600.0
"""Seconds a learned listing is kept when its ``tools/list`` result carries no ``ttlMs``."""

_MODES: Final = ("verify", "report")
_ON_UNKNOWN: Final = ("fetch", "pass", "reject")
_LEGACY: Final = ("strip", "pass", "reject")


@dataclass(frozen=True, slots=True, kw_only=True)
class GateSettings:
    """How one gate treats the requests it sees.

    Attributes:
        mode: ``"verify"`` (default) or ``"report"``.
        on_unknown: ``"fetch"`` (default), ``"pass"`` or ``"reject"``.
        legacy: ``"strip"`` (default), ``"pass"`` or ``"reject"``.
        max_body: the largest request body read, in bytes (default 4 MiB); a longer one is answered 413.
        learn_ttl: seconds a learned listing is kept when it carries no ``ttlMs`` (default 3,600).
        policy: called with each verified modern call; ``None`` for none.

    Raises:
        ValueError: an option has a value outside its choices, naming the option and the choices.
    """

    mode: Mode = "verify"
    on_unknown: OnUnknown = "fetch"
    legacy: Legacy = "strip"
    max_body: int = DEFAULT_MAX_BODY
    learn_ttl: float = DEFAULT_LEARN_TTL
    policy: Policy | None = None

    def __post_init__(self) -> None:
        for option, value, choices in (
            ("mode", self.mode, _MODES),
            ("on_unknown", self.on_unknown, _ON_UNKNOWN),
            ("legacy", self.legacy, _LEGACY),
        ):
            if value not in choices:
                raise ValueError(f"{option} must be one of {', '.join(map(repr, choices))}, got {value!r}")
        if isinstance(self.max_body, bool) or not isinstance(self.max_body, int) or self.max_body < 0:
            raise ValueError(f"max_body must be a non-negative number of bytes, got {self.max_body!r}")
        if isinstance(self.learn_ttl, bool) or not isinstance(self.learn_ttl, int | float) or not self.learn_ttl >= 0:
            raise ValueError(f"learn_ttl must be a non-negative number of seconds, got {self.learn_ttl!r}")
        if self.policy is not None and not callable(self.policy):
            raise ValueError(f"policy must be callable, got {type(self.policy).__name__}")

"""The state machines, as data (pure: no I/O).

Each module defines one :class:`~mcpfsm._machines.definition.MachineDefinition`; :data:`MACHINES`
lists them for the tooling that draws and explains every machine (``mcpfsm diagram``) and for the
property tests that check every machine.

:data:`MACHINES` is built on first use (PEP 562): importing one machine (the tool-call driver imports
``mcpfsm._machines.tool_call``, which imports this package first) then compiles that machine only, and
the authorization machine waits for the first ``auth=`` or the tooling (bench/startup.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .definition import MachineDefinition

    MACHINES: Mapping[str, MachineDefinition[Any, Any]]
    """Every machine by name, in the order the documentation presents them."""

__all__ = ["MACHINES"]


def __getattr__(name: str) -> object:
    if name != "MACHINES":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .authorization import AUTHORIZATION
    from .input import INPUT
    from .tool_call import TOOL_CALL

    machines: Mapping[str, MachineDefinition[Any, Any]] = MappingProxyType(
        {TOOL_CALL.name: TOOL_CALL, AUTHORIZATION.name: AUTHORIZATION, INPUT.name: INPUT}
    )
    globals()["MACHINES"] = machines
    return machines


def __dir__() -> list[str]:
    return sorted({*globals(), "MACHINES"})

"""The state machines, as data (pure: no I/O).

Each module defines one :class:`~mcpfsm._machines.definition.MachineDefinition`; :data:`MACHINES`
lists them for the tooling that draws and explains every machine (``mcpfsm diagram``) and for the
property tests that check every machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from .authorization import AUTHORIZATION
from .definition import MachineDefinition
from .input import INPUT
from .tool_call import TOOL_CALL

__all__ = ["MACHINES"]

MACHINES: Final[Mapping[str, MachineDefinition[Any, Any]]] = MappingProxyType(
    {TOOL_CALL.name: TOOL_CALL, AUTHORIZATION.name: AUTHORIZATION, INPUT.name: INPUT}
)
"""Every machine by name, in the order the documentation presents them."""

"""Every machine by name: :data:`MACHINES`, found from the naming convention of this package (see its docstring).

Importing this module imports every machine module of the package; the tooling (``mcpfsm diagram``, the trail
viewer) and the tests that check every machine import it, the library does not (each driver imports its own
machine).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from . import __name__ as _PACKAGE
from . import __path__ as _PATH
from .definition import MachineDefinition

__all__ = ["MACHINES"]

_FIRST: Final = "tool_call"


def _discover() -> Mapping[str, MachineDefinition[Any, Any]]:
    # Every module of the package that defines a machine under its own name in capitals, the tool-call one first.
    names = sorted((info.name for info in pkgutil.iter_modules(_PATH)), key=lambda name: (name != _FIRST, name))
    machines: dict[str, MachineDefinition[Any, Any]] = {}
    for name in names:
        definition = getattr(importlib.import_module(f"{_PACKAGE}.{name}"), name.upper(), None)
        if isinstance(definition, MachineDefinition):
            machines[definition.name] = definition
    return MappingProxyType(machines)


MACHINES: Final = _discover()
"""Every machine by name, in the order the documentation presents them."""

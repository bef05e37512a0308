"""The steps of an authorization flow that can refuse, named as the states of the authorization machine.

An :class:`~mcpfsm.AuthorizationError` names the state its flow was in; the readers of this package raise
it in the step they belong to. ``mcpfsm._machines.authorization`` defines the machine; the driver and the
client layer name states from there, and a test checks that every name here is one of its states.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ASSERTING",
    "AUTHORIZING",
    "DISCOVERING_ISSUER",
    "DISCOVERING_RESOURCE",
    "EXCHANGING",
    "REFRESHING",
    "REGISTERING",
]


DISCOVERING_RESOURCE: Final = "discovering_resource"
DISCOVERING_ISSUER: Final = "discovering_issuer"
REFRESHING: Final = "refreshing"
REGISTERING: Final = "registering"
ASSERTING: Final = "asserting"
AUTHORIZING: Final = "authorizing"
EXCHANGING: Final = "exchanging"

"""Input the server asks for (SEP-2322 multi round-trip requests, and legacy server requests): what every request needs.

In the 2026-07-28 protocol a server that needs something from the client's user answers ``tools/call``,
``prompts/get`` or ``resources/read`` with ``resultType: "input_required"`` (SEP-2322, "Multi Round-Trip
Requests"); in the 2025-11-25 protocol the same three methods (``elicitation/create``,
``sampling/createMessage``, ``roots/list``) arrive as real JSON-RPC requests from the server
("Elicitation", "Sampling", "Roots"). This module holds the little of that every request needs, so that a
client that only calls tools loads nothing more:

- the method names and result types (:data:`COMPLETE`, :data:`INPUT_REQUIRED`, :data:`MRTR_METHODS`, …);
- :func:`result_type` — the ``resultType`` of any result (absent = ``"complete"``; unknown, or
  ``input_required`` on another method, is a :class:`~mcpfsm.ProtocolError`);
- :func:`declared_capabilities` — the ``clientCapabilities`` the client's handlers declare;
- :class:`FormContentError` — a handler's accepted form that breaks its ``requestedSchema``.

What an input round needs — the parsed ``input_required`` result, the rules of answering (refusals,
checked answers, SEP-1034 defaults, the form check) and the resend — is in ``mcpfsm._core.input_rounds``,
imported with the first input round or server request (start-up: bench/startup.py).

Pure: no I/O; imports neither trio, httpx nor loguru.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .errors import ProtocolError

__all__ = [
    "COMPLETE",
    "TASK",
    "ELICITATION",
    "ELICITATION_MODES",
    "HANDLER_NAMES",
    "INPUT_METHODS",
    "INPUT_REQUIRED",
    "MRTR_METHODS",
    "ROOTS",
    "SAMPLING",
    "FormContentError",
    "declared_capabilities",
    "result_type",
]

COMPLETE: Final = "complete"
INPUT_REQUIRED: Final = "input_required"
TASK: Final = "task"
"""The ``resultType`` of a ``CreateTaskResult`` (SEP-2663): legal on ``tools/call`` only."""

MRTR_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})
"""The requests a server may answer with ``input_required`` (SEP-2322); on any other it is a protocol error."""

ELICITATION: Final = "elicitation/create"
SAMPLING: Final = "sampling/createMessage"
ROOTS: Final = "roots/list"
INPUT_METHODS: Final = (ELICITATION, SAMPLING, ROOTS)
"""The methods an input request (or a legacy server request other than ``ping``) may name."""

ELICITATION_MODES: Final = ("form", "url")
"""Elicitation modes mcpfsm can declare (MCP 2025-11-25 and 2026-07-28 "Elicitation")."""

HANDLER_NAMES: Final = {ELICITATION: "on_elicitation", SAMPLING: "on_sampling", ROOTS: "on_roots"}
"""The client's handler argument that answers each input method (what errors name)."""


def result_type(method: str, result: Mapping[str, Any]) -> str:
    """The ``resultType`` of ``result``, a result of ``method``: ``"complete"`` or ``"input_required"``.

    SEP-2322: an absent ``resultType`` is ``"complete"``; any other value the client does not know is
    invalid; ``input_required`` is legal only on ``tools/call``, ``prompts/get`` and ``resources/read``.

    Raises:
        ProtocolError: an unknown ``resultType``, or ``input_required`` on another method.
    """
    if "resultType" not in result:
        return COMPLETE
    value = result["resultType"]
    if value == COMPLETE:
        return COMPLETE
    if value == INPUT_REQUIRED:
        if method not in MRTR_METHODS:
            raise ProtocolError(
                f"{method} answered resultType 'input_required', which only tools/call, prompts/get and "
                "resources/read may (SEP-2322)"
            )
        return INPUT_REQUIRED
    if value == TASK and method == "tools/call":
        # SEP-2663: a CreateTaskResult; whether the client asked for one is the tool-call driver's to check.
        return TASK
    raise ProtocolError(
        f"{method} answered an unknown resultType {value!r} (SEP-2322 knows 'complete' and 'input_required')"
    )


def declared_capabilities(elicitation_modes: tuple[str, ...], sampling: bool, roots: bool) -> dict[str, Any]:
    """The ``ClientCapabilities`` to declare: exactly the handlers given.

    ``elicitation`` names each declared mode (``{"form": {}}``, plus ``"url"``; none without an elicitation
    handler); ``sampling`` and ``roots`` are ``{}``: no ``sampling.tools`` and no ``roots.listChanged``
    (mcpfsm sends no roots notifications). The same object serves the modern ``_meta`` and the legacy
    ``initialize`` (MCP 2025-11-25 and 2026-07-28, "Capabilities").
    """
    declared: dict[str, Any] = {}
    if elicitation_modes:
        declared["elicitation"] = {mode: {} for mode in elicitation_modes}
    if sampling:
        declared["sampling"] = {}
    if roots:
        declared["roots"] = {}
    return declared


class FormContentError(ValueError):
    """A handler accepted a form elicitation with content that does not match its ``requestedSchema``.

    Raised before anything is sent; the message names each property and rule, never a value.

    Attributes:
        problems: one line per violation (``/path: rule``), as ``mcpfsm._core.input_rounds.form_problems``
            gives them.
    """

    def __init__(self, handler: str, problems: list[str]) -> None:
        super().__init__(f"{handler} accepted content that does not match the requestedSchema: " + "; ".join(problems))
        self.problems = problems

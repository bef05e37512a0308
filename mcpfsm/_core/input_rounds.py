"""One input round (SEP-2322 multi round-trip requests, and legacy server requests): the pure part.

A server that needs something from the client's user answers ``tools/call``, ``prompts/get`` or
``resources/read`` with ``resultType: "input_required"``: ``inputRequests`` (keyed ``elicitation/create``,
``sampling/createMessage`` or ``roots/list`` requests, without ids) and/or an opaque ``requestState``. The
client gathers the answers and sends the same request again, with a new JSON-RPC id, ``inputResponses``
keyed like the requests and the ``requestState`` echoed byte for byte (SEP-2322, "Multi Round-Trip
Requests"). In the 2025-11-25 protocol the same three methods arrive as real JSON-RPC requests from the
server ("Elicitation", "Sampling", "Roots"). This module holds what both eras share once input is asked
for, and needs no I/O:

- :func:`parse_input_required` — an ``input_required`` result as an :class:`InputRequired`;
- :func:`with_input` — the params of a resend (the only place ``inputResponses``/``requestState`` are added);
- :class:`Offered` — what the client's handlers declare: :meth:`Offered.capabilities` (the
  ``clientCapabilities``), :meth:`Offered.refusal` (why an input request cannot be answered) and
  :meth:`Offered.checked_answer` (a handler's answer validated, SEP-1034 defaults filled in, an accepted
  form checked against its ``requestedSchema``: :func:`form_problems`);
- :func:`state_only_backoff` — the pause before resending a round that asked for nothing.

It is imported with the first ``input_required`` result or server request, not with ``mcpfsm``: a client
that only calls tools never creates these records (start-up: bench/startup.py). What every request needs
(the method names, :func:`~mcpfsm._core.input.result_type`, the declared capabilities,
:class:`~mcpfsm._core.input.FormContentError`) is in ``mcpfsm._core.input``.

Pure: no I/O; imports neither trio, httpx nor loguru.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from .constants import INVALID_PARAMS, METHOD_NOT_FOUND
from .errors import ProtocolError
from .input import ELICITATION, HANDLER_NAMES, INPUT_METHODS, ROOTS, SAMPLING, FormContentError, declared_capabilities

__all__ = [
    "MAX_INPUT_REQUESTS",
    "InputRequest",
    "InputRequired",
    "Offered",
    "Refusal",
    "fill_defaults",
    "form_problems",
    "parse_input_required",
    "state_only_backoff",
    "with_input",
]

MAX_INPUT_REQUESTS: Final = 100
"""The most ``inputRequests`` one ``input_required`` result may carry; more is a ``ProtocolError`` (nothing is run)."""

_ACTIONS: Final = ("accept", "decline", "cancel")
_BACKOFF_FIRST: Final = 0.05
_BACKOFF_CAP: Final = 0.25
# More doublings than this are past the cap anyway.
_BACKOFF_DOUBLINGS: Final = 8


@dataclass(frozen=True, slots=True, kw_only=True)
class InputRequest:
    """One entry of ``inputRequests``: what the server wants, as it would send it as a request.

    Attributes:
        method: ``elicitation/create``, ``sampling/createMessage`` or ``roots/list``.
        params: the request's params (``{}`` when it had none).
    """

    method: str
    params: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class InputRequired:
    """One ``input_required`` result (SEP-2322).

    Attributes:
        requests: ``inputRequests`` by the server's keys, in the server's order; empty for a state-only
            round (the client resends at once, after a short backoff).
        state: ``requestState`` exactly as received, or ``None`` when the result had none.
    """

    requests: Mapping[str, InputRequest]
    state: str | None

    @property
    def methods(self) -> dict[str, str]:
        """The method of each input request, by key (what the audit events record)."""
        return {key: request.method for key, request in self.requests.items()}


def parse_input_required(method: str, result: Mapping[str, Any]) -> InputRequired:
    """Read an ``input_required`` result of ``method`` (SEP-2322 ``InputRequiredResult``).

    Raises:
        ProtocolError: ``inputRequests`` is not an object of ``{method, params?}`` objects naming one of
            :data:`INPUT_METHODS`, or holds more than :data:`MAX_INPUT_REQUESTS`; ``requestState`` is not a
            string, or the result carries neither.
    """
    raw = result.get("inputRequests")
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ProtocolError(f'{method} input_required result: "inputRequests" is not an object')
    if len(raw) > MAX_INPUT_REQUESTS:
        # Checked before any entry is read: a round of 50,000 requests would be 50,000 handler calls.
        raise ProtocolError(
            f"{method} input_required result carries {len(raw)} input requests, more than the"
            f" {MAX_INPUT_REQUESTS} one round may carry"
        )
    requests: dict[str, InputRequest] = {}
    for key, entry in raw.items():
        if not isinstance(entry, Mapping):
            raise ProtocolError(f"{method} input_required result: input request {key!r} is not an object")
        kind = entry.get("method")
        if kind not in INPUT_METHODS:
            raise ProtocolError(
                f"{method} input_required result: input request {key!r} asks for {kind!r}, which is not one of "
                f"{', '.join(INPUT_METHODS)}"
            )
        params = entry.get("params")
        if params is None:
            params = {}
        if not isinstance(params, Mapping):
            raise ProtocolError(f"{method} input_required result: input request {key!r} has non-object params")
        requests[str(key)] = InputRequest(method=str(kind), params=params)
    state = result.get("requestState")
    if state is not None and not isinstance(state, str):
        raise ProtocolError(f'{method} input_required result: "requestState" is not a string')
    if not requests and state is None:
        raise ProtocolError(f"{method} input_required result carries neither inputRequests nor requestState")
    return InputRequired(requests=requests, state=state)


def with_input(params: Mapping[str, Any], responses: Mapping[str, Any] | None, state: str | None) -> dict[str, Any]:
    """The params of a resend: the original ``params`` plus ``inputResponses`` and ``requestState``.

    SEP-2322: ``requestState`` is echoed exactly and only when the server gave one; ``inputResponses``
    answer the latest round's requests and are left out after a state-only round (``responses=None``).
    This is the only place either member is added to a request, so no other request can carry one.
    """
    resent = dict(params)
    resent.pop("inputResponses", None)
    resent.pop("requestState", None)
    if responses is not None:
        resent["inputResponses"] = dict(responses)
    if state is not None:
        resent["requestState"] = state
    return resent


def state_only_backoff(streak: int) -> float:
    """Seconds to wait before resending after the ``streak``-th state-only round in a row (1, 2, …).

    50 ms, doubling, at most 250 ms: a server that sheds load this way is not hammered.
    """
    # The exponent is bounded first: a long streak (a large max_input_rounds) must not overflow a float.
    return float(min(_BACKOFF_FIRST * 2 ** min(max(streak - 1, 0), _BACKOFF_DOUBLINGS), _BACKOFF_CAP))


def fill_defaults(schema: Any, content: Mapping[str, Any]) -> dict[str, Any]:
    """``content`` plus the ``default`` of every ``requestedSchema`` property it leaves out (SEP-1034).

    Values the user gave are never replaced; a schema that is not an object of property objects adds nothing.
    """
    filled = dict(content)
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if isinstance(properties, Mapping):
        for name, prop in properties.items():
            if isinstance(prop, Mapping) and "default" in prop and name not in filled:
                filled[name] = copy.deepcopy(prop["default"])
    return filled


_MAX_FORM_PROBLEMS: Final = 10
# What a problem says instead of the value: the user's answers never reach an error message.
_HIDDEN: Final = "the value"


def form_problems(schema: Any, content: Mapping[str, Any]) -> list[str]:
    """What is wrong with an accepted form's ``content`` for its ``requestedSchema``: ``[]`` when it conforms.

    MCP "Elicitation": clients SHOULD validate what the user gave against the requested schema. The check is
    JSON Schema (2020-12 unless ``$schema`` says otherwise) with ``format`` asserted (``email``, ``uri``,
    ``date``, ``date-time``), by ``jsonschema-rs``, never fetching a ``$ref``. Each problem names the property
    (a JSON pointer) and the rule, never the value given: the values are what the user typed. A schema the
    library cannot compile is the server's mistake and checks nothing (the server sees the answer as given).
    """
    if not isinstance(schema, Mapping):
        return []
    # Imported on the first form checked, not with mcpfsm (start-up: docs/benchmarks.md).
    import jsonschema_rs

    try:
        validator = jsonschema_rs.validator_for(dict(schema), validate_formats=True, offline=True, mask=_HIDDEN)
    except (jsonschema_rs.ValidationError, ValueError, TypeError):
        return []
    found: list[str] = []
    for error in validator.iter_errors(dict(content)):
        path = "/" + "/".join(str(part).replace("~", "~0").replace("/", "~1") for part in error.instance_path)
        found.append(f"{path}: {error.message}")
        if len(found) >= _MAX_FORM_PROBLEMS:
            break
    return found


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why an input request cannot be answered, as the JSON-RPC error a legacy answer carries.

    Attributes:
        code: ``-32601`` (no handler for the method) or ``-32602`` (a mode or feature not declared,
            malformed params).
        message: what was wrong.
    """

    code: int
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Offered:
    """What the client's handlers declare, and the rules that follow from it.

    Attributes:
        elicitation_modes: the elicitation modes declared (empty without an elicitation handler).
        sampling: a sampling handler is registered.
        roots: a roots handler is registered.
    """

    elicitation_modes: tuple[str, ...] = ()
    sampling: bool = False
    roots: bool = False

    def capabilities(self) -> dict[str, Any]:
        """The ``ClientCapabilities`` to declare: exactly the handlers given.

        One rule for both: :func:`~mcpfsm._core.input.declared_capabilities`.
        """
        return declared_capabilities(self.elicitation_modes, self.sampling, self.roots)

    def refusal(self, method: str, params: Mapping[str, Any]) -> Refusal | None:
        """Why an input request for ``method`` with ``params`` cannot be answered, or ``None`` if it can.

        The server asked for something the client did not declare (no handler, an undeclared elicitation
        mode, sampling with ``tools``), or the request is malformed.
        """
        if method not in INPUT_METHODS:
            return Refusal(METHOD_NOT_FOUND, f"mcpfsm does not support {method!r}")
        offered = {ELICITATION: bool(self.elicitation_modes), SAMPLING: self.sampling, ROOTS: self.roots}[method]
        if not offered:
            return Refusal(
                METHOD_NOT_FOUND, f"no {HANDLER_NAMES[method]} handler: the client did not declare {method!r}"
            )
        if method == ELICITATION:
            mode = params.get("mode", "form")
            if mode not in self.elicitation_modes:
                return Refusal(INVALID_PARAMS, f"elicitation mode {mode!r} was not declared")
            if mode == "form" and not isinstance(params.get("requestedSchema"), Mapping):
                return Refusal(INVALID_PARAMS, 'form elicitation without an object "requestedSchema"')
            if mode == "url" and not isinstance(params.get("url"), str):
                return Refusal(INVALID_PARAMS, 'URL elicitation without a string "url"')
        elif method == SAMPLING:
            if "tools" in params or "toolChoice" in params:
                return Refusal(INVALID_PARAMS, "sampling with tools was not declared (no sampling.tools capability)")
            if not isinstance(params.get("messages"), list):
                return Refusal(INVALID_PARAMS, 'sampling without a "messages" list')
        return None

    def checked_answer(self, method: str, params: Mapping[str, Any], answer: Any) -> dict[str, Any]:
        """A handler's ``answer`` to ``method``, validated, as the result object to send.

        For an ``accept`` of a form elicitation, the ``default`` of every ``requestedSchema`` property
        the handler left out is filled in (SEP-1034), then the content is checked against the schema
        (:func:`form_problems`); ``content`` goes only with a form ``accept`` ("Elicitation": a
        ``decline``, a ``cancel`` or a URL-mode ``accept`` carries none) and is dropped from the others.

        Content that breaks the schema is refused here, before anything is sent: the server asked for
        that shape, so sending another would fail there less clearly or, worse, be acted on; turning it
        into a ``decline`` would misstate what the user chose. The error names each property and rule.

        Raises:
            TypeError: ``answer`` is not a dict, or an elicitation ``content`` is not an object.
            FormContentError: accepted form content that does not match the ``requestedSchema`` (a
                ``ValueError``; the values are not shown).
            ValueError: an elicitation ``action`` other than accept, decline or cancel, or a roots
                answer without a ``roots`` list.
        """
        handler = HANDLER_NAMES.get(method, "handler")
        if not isinstance(answer, Mapping):
            raise TypeError(f"{handler} returned {type(answer).__name__}, expected a dict (the {method} result)")
        result = dict(answer)
        if method == ELICITATION:
            action = result.get("action")
            if action not in _ACTIONS:
                raise ValueError(f"{handler} returned action {action!r}; expected 'accept', 'decline' or 'cancel'")
            content = result.pop("content", None)
            if content is not None and not isinstance(content, Mapping):
                raise TypeError(f"{handler} returned content of type {type(content).__name__}, expected a dict")
            if action == "accept" and params.get("mode", "form") == "form":
                schema = params.get("requestedSchema")
                result["content"] = fill_defaults(schema, content or {})
                problems = form_problems(schema, result["content"])
                if problems:
                    raise FormContentError(handler, problems)
        elif method == ROOTS and not isinstance(result.get("roots"), list):
            raise ValueError(f'{handler} returned no "roots" list')
        return result

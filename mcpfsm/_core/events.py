"""Audit events: one event per state a machine's run enters (README, "Reading the audit events").

A tool call publishes one :class:`CallEvent` per state it enters (``machine == "tool-call"``); an
authorization flow publishes one :class:`AuthEvent` per state (``machine == "authorization"``): the same
fields plus the issuer, the resource and the scopes, never a token, code, verifier, secret or assertion.
Input the server asks for outside a tool call's machine (the input rounds of ``prompts/get`` and
``resources/read``, a legacy server request) is recorded as :class:`InputEvent` values (``machine ==
"input"``: one run of the input machine, specs/input.md). All go to the same ``on_event`` callback and
``events()`` channels.

Pure: building and serialising events does no I/O; the drivers publish them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .errors import McpError
from .input import FormContentError

__all__ = [
    "AuthEvent",
    "CallEvent",
    "InputEvent",
    "error_summary",
    "input_failure_summary",
    "tool_call_event",
    "utc_timestamp",
]

_second: tuple[int, str] = (-1, "")


def utc_timestamp(ns: int) -> str:
    """``ns`` nanoseconds since the epoch in UTC, ISO-8601 to the microsecond: ``CallEvent.at``.

    The same text as ``datetime.now(UTC).isoformat(timespec="microseconds")`` for that instant (microseconds
    truncated, ``+00:00``), at a third of its cost: the date and time of day are formatted once a second.
    """
    global _second
    seconds = ns // 1_000_000_000
    known = _second
    if known[0] != seconds:
        from datetime import UTC, datetime  # once a second, and not with `import mcpfsm`

        known = _second = (seconds, datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S."))
    # The microseconds zero-padded to six digits: 1_000_000 + µs has seven, the first of them a 1.
    return known[1] + str(1_000_000 + ns // 1000 % 1_000_000)[1:] + "+00:00"


@dataclass(frozen=True, slots=True, kw_only=True, init=False)
class CallEvent:
    """The fact that one tool call entered one state (README, "Reading the audit events").

    Attributes:
        call_id: unique per call.
        seq: 0, 1, 2, … within the call.
        tool: the tool's name.
        state: the state entered (a state of the tool-call machine).
        previous: the state left, ``None`` for the first event (``resolving``).
        trigger: what happened to cause the transition, ``None`` for the first event.
        attempt: 1, then 2 once the call is ``retrying``.
        at: UTC wall-clock time, ISO-8601.
        elapsed: seconds since the call began.
        headers: the header plan in effect, where one exists (read-only: the events of one call share it).
        error: ``{"type", "code", "message"}`` of the error involved, where one exists; when an input
            handler raised, the message names only the exception's type (its text may quote the user).
        round: how many ``input_required`` results the call has received so far (SEP-2322): 0 until the
            first, then the number of the input round in progress.
        input_requests: on ``awaiting_input`` and ``retry_awaiting_input``, the method each input request
            asks for, by the server's key (``{}`` for a state-only round); ``None`` elsewhere. The
            requests' params (messages, schemas) are never recorded.
        input_responses: on ``resending`` and ``retry_resending``, the answers sent, by key, when the client
            was created with ``audit_answers=True``; ``None`` otherwise (the default: the user's answers
            never reach an event).
        machine: the machine the run belongs to: ``"tool-call"`` here, ``"authorization"`` for an
            :class:`AuthEvent`, ``"input"`` for an :class:`InputEvent` (input asked for outside a tool call).
        server: the name of the server the client talks to inside a :class:`~mcpfsm.ClientGroup` (its key in
            the configuration); ``None`` for a client outside a group.
    """

    call_id: str
    seq: int
    tool: str
    state: str
    previous: str | None
    trigger: str | None
    attempt: int
    at: str
    elapsed: float
    headers: Mapping[str, str] | None = None
    error: Mapping[str, Any] | None = None
    round: int = 0
    input_requests: Mapping[str, str] | None = None
    input_responses: Mapping[str, Any] | None = None
    machine: str = "tool-call"
    server: str | None = None

    def __init__(
        self,
        *,
        call_id: str,
        seq: int,
        tool: str,
        state: str,
        previous: str | None,
        trigger: str | None,
        attempt: int,
        at: str,
        elapsed: float,
        headers: Mapping[str, str] | None = None,
        error: Mapping[str, Any] | None = None,
        round: int = 0,
        input_requests: Mapping[str, str] | None = None,
        input_responses: Mapping[str, Any] | None = None,
        machine: str = "tool-call",
        server: str | None = None,
    ) -> None:
        """Make the event: what the dataclass would generate, at about half its cost (four events per tool call)."""
        object.__setattr__(self, "server", server)
        _fill(
            self,
            call_id,
            seq,
            tool,
            state,
            previous,
            trigger,
            attempt,
            at,
            elapsed,
            headers,
            error,
            round,
            input_requests,
            input_responses,
            machine,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict of every field (one JSON Lines record)."""
        return {
            "machine": self.machine,
            "call_id": self.call_id,
            "seq": self.seq,
            "tool": self.tool,
            "state": str(self.state),
            "previous": None if self.previous is None else str(self.previous),
            "trigger": None if self.trigger is None else str(self.trigger),
            "attempt": self.attempt,
            "at": self.at,
            "elapsed": self.elapsed,
            "headers": None if self.headers is None else dict(self.headers),
            "error": None if self.error is None else dict(self.error),
            "round": self.round,
            "input_requests": None if self.input_requests is None else dict(self.input_requests),
            "input_responses": None if self.input_responses is None else dict(self.input_responses),
            "server": self.server,
        }

    def to_json(self) -> str:
        """One JSON Lines record, without the trailing newline."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CallEvent:
        """Rebuild an event from :meth:`to_dict` output (for reading audit logs).

        A record whose ``machine`` is ``"authorization"`` becomes an :class:`AuthEvent`; a record without
        ``machine`` (written before there were two machines) is a tool-call event. Records written before
        the input-round fields existed read as ``round=0`` with no input fields.

        Raises:
            ValueError: a field is missing or has the wrong type.
        """
        if data.get("machine") == AuthEvent.MACHINE:
            return AuthEvent.from_dict(data)
        if data.get("machine") == InputEvent.MACHINE:
            return InputEvent.from_dict(data)
        try:
            return CallEvent(**_common_fields(data))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a CallEvent record: {exc}") from exc


_Setter = Callable[[CallEvent, Any], None]
_SET_CALL_ID: _Setter = CallEvent.__dict__["call_id"].__set__
_SET_SEQ: _Setter = CallEvent.__dict__["seq"].__set__
_SET_TOOL: _Setter = CallEvent.__dict__["tool"].__set__
_SET_STATE: _Setter = CallEvent.__dict__["state"].__set__
_SET_PREVIOUS: _Setter = CallEvent.__dict__["previous"].__set__
_SET_TRIGGER: _Setter = CallEvent.__dict__["trigger"].__set__
_SET_ATTEMPT: _Setter = CallEvent.__dict__["attempt"].__set__
_SET_AT: _Setter = CallEvent.__dict__["at"].__set__
_SET_ELAPSED: _Setter = CallEvent.__dict__["elapsed"].__set__
_SET_HEADERS: _Setter = CallEvent.__dict__["headers"].__set__
_SET_ERROR: _Setter = CallEvent.__dict__["error"].__set__
_SET_ROUND: _Setter = CallEvent.__dict__["round"].__set__
_SET_INPUT_REQUESTS: _Setter = CallEvent.__dict__["input_requests"].__set__
_SET_INPUT_RESPONSES: _Setter = CallEvent.__dict__["input_responses"].__set__
_SET_MACHINE: _Setter = CallEvent.__dict__["machine"].__set__



def _fill(
    event: CallEvent,
    call_id: str,
    seq: int,
    tool: str,
    state: str,
    previous: str | None,
    trigger: str | None,
    attempt: int,
    at: str,
    elapsed: float,
    headers: Mapping[str, str] | None,
    error: Mapping[str, Any] | None,
    round: int,
    input_requests: Mapping[str, str] | None,
    input_responses: Mapping[str, Any] | None,
    machine: str,
) -> None:
    # Every field of a new event, in declaration order, through the slots' own setters: past the frozen
    # __setattr__ as the generated __init__ goes past it with object.__setattr__, without looking names up.
    _SET_CALL_ID(event, call_id)
    _SET_SEQ(event, seq)
    _SET_TOOL(event, tool)
    _SET_STATE(event, state)
    _SET_PREVIOUS(event, previous)
    _SET_TRIGGER(event, trigger)
    _SET_ATTEMPT(event, attempt)
    _SET_AT(event, at)
    _SET_ELAPSED(event, elapsed)
    _SET_HEADERS(event, headers)
    _SET_ERROR(event, error)
    _SET_ROUND(event, round)
    _SET_INPUT_REQUESTS(event, input_requests)
    _SET_INPUT_RESPONSES(event, input_responses)
    _SET_MACHINE(event, machine)


class _Draft:
    # A writable twin of CallEvent: the same slots in the same order, no __dict__, no __weakref__. A factory
    # fills a draft with plain attribute stores (which CPython 3.11 specialises for slots) and then gives it
    # the class CallEvent — an assignment Python allows between classes of identical layout (the slots are
    # compared name by name; "__class__ assignment", Python Data Model §3.3.1). A changed field list makes
    # that assignment raise TypeError on the first event; tests/test_events.py also compares the slots.
    __slots__ = CallEvent.__slots__


_new = object.__new__


def tool_call_event(
    call_id: str,
    seq: int,
    tool: str,
    state: str,
    previous: str | None,
    trigger: str | None,
    attempt: int,
    at: str,
    elapsed: float,
    headers: Mapping[str, str] | None,
    error: Mapping[str, Any] | None,
    round: int,
    input_requests: Mapping[str, str] | None,
    input_responses: Mapping[str, Any] | None,
) -> CallEvent:
    """The same :class:`CallEvent` as ``CallEvent(call_id=call_id, ...)``, every field given, for the tool-call driver.

    The frozen dataclass lets a new event's fields be stored only past its ``__setattr__`` (what ``__init__``
    and ``_fill`` do, one descriptor call per field, about 13,000 instructions an event); this stores them
    into a :class:`_Draft` of the same layout as ordinary attributes and then makes the draft a
    ``CallEvent`` — the same object ``__init__`` would build (equal, same repr, hash and ``fields``) at about
    a third of the cost, four events per tool call.
    """
    event: Any = _new(_Draft)
    event.call_id = call_id
    event.seq = seq
    event.tool = tool
    event.state = state
    event.previous = previous
    event.trigger = trigger
    event.attempt = attempt
    event.at = at
    event.elapsed = elapsed
    event.headers = headers
    event.error = error
    event.round = round
    event.input_requests = input_requests
    event.input_responses = input_responses
    event.machine = "tool-call"
    event.server = None
    event.__class__ = CallEvent
    made: CallEvent = event
    return made


def _common_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "call_id": str(data["call_id"]),
        "seq": int(data["seq"]),
        "tool": str(data["tool"]),
        "state": str(data["state"]),
        "previous": None if data.get("previous") is None else str(data["previous"]),
        "trigger": None if data.get("trigger") is None else str(data["trigger"]),
        "attempt": int(data["attempt"]),
        "at": str(data["at"]),
        "elapsed": float(data["elapsed"]),
        "headers": None if data.get("headers") is None else dict(data["headers"]),
        "error": None if data.get("error") is None else dict(data["error"]),
        "round": int(data.get("round", 0)),
        "input_requests": None if data.get("input_requests") is None else dict(data["input_requests"]),
        "input_responses": None if data.get("input_responses") is None else dict(data["input_responses"]),
        "server": None if data.get("server") is None else str(data["server"]),
    }


@dataclass(frozen=True, slots=True, kw_only=True, init=False)
class AuthEvent(CallEvent):
    """The fact that one authorization flow entered one state (README, "Authorization").

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

    def __init__(
        self,
        *,
        call_id: str,
        seq: int,
        tool: str,
        state: str,
        previous: str | None,
        trigger: str | None,
        attempt: int,
        at: str,
        elapsed: float,
        headers: Mapping[str, str] | None = None,
        error: Mapping[str, Any] | None = None,
        round: int = 0,
        input_requests: Mapping[str, str] | None = None,
        input_responses: Mapping[str, Any] | None = None,
        machine: str = MACHINE,
        server: str | None = None,
        issuer: str | None = None,
        resource: str | None = None,
        scopes: tuple[str, ...] = (),
    ) -> None:
        """Make the event: what the dataclass would generate.

        Written out because the generated ``__init__`` is a third of what creating this class costs when
        ``import mcpfsm`` runs; tests/test_events.py checks that both take the same fields.
        """
        _fill(
            self,
            call_id,
            seq,
            tool,
            state,
            previous,
            trigger,
            attempt,
            at,
            elapsed,
            headers,
            error,
            round,
            input_requests,
            input_responses,
            machine,
        )
        object.__setattr__(self, "server", server)
        object.__setattr__(self, "issuer", issuer)
        object.__setattr__(self, "resource", resource)
        object.__setattr__(self, "scopes", scopes)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict of every field (one JSON Lines record)."""
        return {
            **CallEvent.to_dict(self),
            "issuer": self.issuer,
            "resource": self.resource,
            "scopes": list(self.scopes),
        }

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
                **_common_fields(data),
                issuer=None if data.get("issuer") is None else str(data["issuer"]),
                resource=None if data.get("resource") is None else str(data["resource"]),
                scopes=tuple(scopes),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not an AuthEvent record: {exc}") from exc


@dataclass(frozen=True, slots=True, kw_only=True, init=False)
class InputEvent(CallEvent):
    """Input the server asked for outside the tool-call machine (README, "Reading the audit events").

    Each is one state entered by a run of the input machine (``mcpfsm._machines.input``, specs/input.md); its
    first event is that machine's initial state, ``awaiting_input``, with no ``previous`` and no ``trigger``.
    Two kinds of run publish these:

    - the input rounds (SEP-2322) of a ``prompts/get`` or ``resources/read`` (and of any request sent with
      ``Client.request``), once its first ``input_required`` result arrives (a request that asks for nothing
      publishes nothing): ``awaiting_input`` per round (``input_requests``), ``resending`` when the round's
      answers go out, then ``succeeded``, ``failed`` or ``cancelled``;
    - a server request the client answers in the legacy era (``elicitation/create``, ``sampling/createMessage``,
      ``roots/list``; a ``ping`` is no input and is not recorded): ``awaiting_input`` when it arrives
      (``input_requests`` is ``{id: method}``), then ``succeeded`` once the answer was sent, ``failed`` (the
      JSON-RPC error sent: a refusal such as -32601, or a handler that raised; or the answer could not be sent)
      or ``cancelled`` (the client closed first).

    The fields of :class:`CallEvent` mean the same here, with ``call_id`` naming this run, ``tool`` the tool
    whose call was waiting for a server request's answer (it arrived on that call's stream; ``""`` otherwise),
    ``attempt`` always 1 and ``headers`` always ``None``. ``input_responses`` (on ``resending``, and on
    ``succeeded`` for a server request: ``{id: result}``) is recorded only with ``audit_answers=True``; a
    handler's own exception is named by its type only.

    Attributes:
        request: the method of the request the input is for (``prompts/get``, ``resources/read``), or the
            method of the server's request (``elicitation/create``, …).
        target: the prompt name or resource URI; for a server request, its JSON-RPC id as text.
    """

    MACHINE: ClassVar[str] = "input"

    machine: str = MACHINE
    request: str = ""
    target: str = ""

    def __init__(
        self,
        *,
        call_id: str,
        seq: int,
        tool: str,
        state: str,
        previous: str | None,
        trigger: str | None,
        attempt: int,
        at: str,
        elapsed: float,
        headers: Mapping[str, str] | None = None,
        error: Mapping[str, Any] | None = None,
        round: int = 0,
        input_requests: Mapping[str, str] | None = None,
        input_responses: Mapping[str, Any] | None = None,
        machine: str = MACHINE,
        server: str | None = None,
        request: str = "",
        target: str = "",
    ) -> None:
        """Make the event: what the dataclass would generate (written out, as :class:`AuthEvent`'s)."""
        _fill(
            self,
            call_id,
            seq,
            tool,
            state,
            previous,
            trigger,
            attempt,
            at,
            elapsed,
            headers,
            error,
            round,
            input_requests,
            input_responses,
            machine,
        )
        object.__setattr__(self, "server", server)
        object.__setattr__(self, "request", request)
        object.__setattr__(self, "target", target)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict of every field (one JSON Lines record)."""
        return {**CallEvent.to_dict(self), "request": self.request, "target": self.target}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> InputEvent:
        """Rebuild an event from :meth:`to_dict` output.

        Raises:
            ValueError: a field is missing or has the wrong type.
        """
        try:
            return InputEvent(**_common_fields(data), request=str(data["request"]), target=str(data["target"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not an InputEvent record: {exc}") from exc


def error_summary(error: BaseException) -> dict[str, Any]:
    """The ``error`` field of an event: type name, JSON-RPC code (or ``None``) and message."""
    code = getattr(error, "code", None)
    message = getattr(error, "message", None)
    return {
        "type": type(error).__name__,
        "code": code if isinstance(code, int) else None,
        "message": message if isinstance(message, str) else str(error),
    }


def input_failure_summary(error: BaseException) -> dict[str, Any]:
    """The ``error`` field of an ``input_failed`` event (either machine that runs the SEP-2322 input loop).

    mcpfsm's own errors keep their message (a :class:`~mcpfsm.McpError`; a ``FormContentError`` names
    properties and rules, never a value); a handler's own exception may quote what the user typed, so the
    event names its type only.
    """
    summary = error_summary(error)
    if not isinstance(error, McpError | FormContentError):
        summary["message"] = f"an input handler raised {type(error).__name__}"
    return summary

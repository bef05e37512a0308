"""Audit events: one event per state a machine's run enters (docs/events.md).

A tool call publishes one :class:`CallEvent` per state it enters (``machine == "tool-call"``); each other machine
publishes its own kind, a :class:`CallEvent` with the fields of its machine, defined in a module of this package
named after the machine and imported with it:

- :class:`~mcpfsm._core.events.authorization.AuthEvent` (``machine == "authorization"``): an authorization flow's
  states, with the issuer, the resource and the scopes, never a token, code, verifier, secret or assertion;
- :class:`~mcpfsm._core.events.input.InputEvent` (``machine == "input"``, specs/input.md): input the server asks
  for outside a tool call's machine (the input rounds of ``prompts/get`` and ``resources/read``, a legacy server
  request);
- :class:`~mcpfsm._core.events.task.TaskEvent` (``machine == "task"``, specs/task.md): a task's states (SEP-2663);
- :class:`~mcpfsm._core.events.gate.GateEvent` (``machine == "gate"``, specs/gate.md): a request through
  ``mcpfsm.gate``, published to the gate's own ``on_event``;
- :class:`~mcpfsm._core.events.group.MemberEvent` (``machine == "group"``, specs/group.md): a client group's
  member changed status, published on the group's channels (its ``call_id`` is ``None``).

A client's events go to the same ``on_event`` callback and ``events()`` channels. A client that never runs those
machines never builds their event types (``import mcpfsm`` stays quick: bench/startup.py); :meth:`CallEvent.from_dict`
imports the module of a record's machine when it reads one.

Pure: building and serialising events does no I/O; the drivers publish them.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from ..errors import McpError
from ..input import FormContentError

__all__ = [
    "CallEvent",
    "common_fields",
    "error_summary",
    "input_failure_summary",
    "tool_call_event",
    "utc_timestamp",
]

_second: tuple[int, str] = (-1, "")

_KINDS: dict[str, type[CallEvent]] = {}


def utc_timestamp(ns: int) -> str:
    """``ns`` nanoseconds since the epoch in UTC, ISO-8601 to the microsecond: ``CallEvent.at``.

    The same text as ``datetime.now(UTC).isoformat(timespec="microseconds")`` for that instant (microseconds
    truncated, ``+00:00``), at a third of its cost (bench/layer.py): the date and time of day are formatted once
    a second.
    """
    seconds = ns // 1_000_000_000
    known = _second
    if known[0] != seconds:
        known = _date_and_time(seconds)
    # The microseconds zero-padded to six digits: 1_000_000 + µs has seven, the first of them a 1.
    return known[1] + str(1_000_000 + ns // 1000 % 1_000_000)[1:] + "+00:00"


def _date_and_time(seconds: int) -> tuple[int, str]:
    # The date and time of day of `seconds` since the epoch, kept until the next second comes.
    global _second
    from datetime import UTC, datetime  # once a second, and not with `import mcpfsm`

    _second = (seconds, datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S."))
    return _second


@dataclass(frozen=True, slots=True, kw_only=True)
class CallEvent:
    """The fact that one tool call entered one state (docs/events.md).

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
            ``AuthEvent``, ``"input"`` for an ``InputEvent`` (input asked for outside a tool call), ``"task"``
            for a ``TaskEvent``.
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
    MACHINE: ClassVar[str] = "tool-call"
    """The ``machine`` of this class's events; ``from_dict`` reads a record into the class of its ``machine``."""

    machine: str = MACHINE
    server: str | None = None

    def __init_subclass__(cls) -> None:
        # The event class of each machine, by its MACHINE: how from_dict finds it (the class the dataclass
        # decorator makes with slots is created last, and so is the one kept). No super(): the slots class is
        # a copy, which a zero-argument super() in its methods does not know; object's hook does nothing.
        _KINDS[cls.MACHINE] = cls

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict of every field, ``machine`` first (one JSON Lines record).

        Read-only mappings become dicts and tuples lists; every other value is kept (states and triggers as
        plain strings).
        """
        record: dict[str, Any] = {"machine": self.machine}
        for each in fields(self):
            if each.name != "machine":
                record[each.name] = _plain(getattr(self, each.name))
        return record

    def to_json(self) -> str:
        """One JSON Lines record, without the trailing newline."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CallEvent:
        """Rebuild an event from :meth:`to_dict` output (for reading audit logs).

        A record becomes the event of its ``machine``: ``"authorization"`` an ``AuthEvent``, ``"input"`` an
        ``InputEvent``, ``"task"`` a ``TaskEvent`` (their modules are imported here when needed); a record
        without ``machine`` (written before there were other machines) is a tool-call event. Records written
        before the input-round fields existed read as ``round=0`` with no input fields.

        Raises:
            ValueError: a field is missing or has the wrong type.
        """
        machine = str(data.get("machine"))
        if machine not in _KINDS and machine.isidentifier() and not machine.startswith("_"):
            _import_kind(machine)
        kind = _KINDS.get(machine)
        if kind is not None and kind is not cls:
            return kind.from_dict(data)
        try:
            return cls(**common_fields(data))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a {cls.__name__} record: {exc}") from exc


class _Draft:
    # A writable twin of CallEvent: the same slots in the same order, no __dict__, no __weakref__. A factory
    # fills a draft with plain attribute stores (which CPython 3.11 specialises for slots) and then gives it
    # the class CallEvent — an assignment Python allows between classes of identical layout (the slots are
    # compared name by name; "__class__ assignment", Python Data Model §3.3.1). A changed field list makes
    # that assignment raise TypeError on the first event; tests/drivers/test_events.py also compares the slots.
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
    ns: int,
    elapsed: float,
    headers: Mapping[str, str] | None,
    error: Mapping[str, Any] | None,
    round: int,
    input_requests: Mapping[str, str] | None,
    input_responses: Mapping[str, Any] | None,
    server: str | None,
) -> CallEvent:
    """The same :class:`CallEvent` as ``CallEvent(call_id=call_id, ...)``, for the tool-call driver.

    Every field is given, but ``at``: ``ns`` is the instant (nanoseconds since the epoch), which becomes ``at``
    as :func:`utc_timestamp` writes it. The frozen dataclass lets a new event's fields be stored only past its
    ``__setattr__`` (what ``__init__`` does, one ``object.__setattr__`` call per field); this stores them
    into a :class:`_Draft` of the same layout as ordinary attributes and then makes the draft a
    ``CallEvent`` — the same object ``__init__`` would build (equal, same repr, hash and ``fields``) at about
    a third of the cost, four events per tool call.
    """
    # The event fast path: four events per tool call (bench/repeatable.py, bench/layer.py). The timestamp is
    # utc_timestamp's text, written here rather than in a call of it.
    seconds = ns // 1_000_000_000
    known = _second
    if known[0] != seconds:
        known = _date_and_time(seconds)
    event: Any = _new(_Draft)
    event.call_id = call_id
    event.seq = seq
    event.tool = tool
    event.state = state
    event.previous = previous
    event.trigger = trigger
    event.attempt = attempt
    event.at = known[1] + str(1_000_000 + ns // 1000 % 1_000_000)[1:] + "+00:00"
    event.elapsed = elapsed
    event.headers = headers
    event.error = error
    event.round = round
    event.input_requests = input_requests
    event.input_responses = input_responses
    event.machine = CallEvent.MACHINE
    event.server = server
    event.__class__ = CallEvent
    made: CallEvent = event
    return made


def _plain(value: object) -> object:
    # A field's value as a JSON Lines record holds it.
    if isinstance(value, str):
        return str(value)
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def _import_kind(machine: str) -> None:
    # The module of this package named after the machine defines its event, which registers itself on import
    # (CallEvent.__init_subclass__); a machine with no module of its own here has none.
    module = f"{__name__}.{machine}"
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise


def common_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    """The fields every kind of event shares, read from a record (:meth:`CallEvent.from_dict`)."""
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

"""Sequence diagrams of recorded tool calls and input runs: audit events → Mermaid ``sequenceDiagram``.

Pure: no I/O, no clock, no trio, httpx or loguru. :func:`parse_events` reads the JSON Lines audit
format (one :meth:`CallEvent.to_json` per line), :func:`select_call` picks one run's events (a tool
call, or a run of the input machine; authorization flows are not drawn), and :func:`sequence_diagram`
draws that run between two participants, ``Client`` and ``Server``. For a tool call:

- every state the call enters is a ``Note over Client: state (trigger)``; an input round's note names
  what the server asked for (``key: method``), and the answers when they were recorded;
- ``sending``, ``resending``, ``retrying`` and ``retry_resending`` put a ``tools/call`` arrow on the
  wire, labelled with the headers planned (and the round, for a resend);
- ``relisting`` puts a ``tools/list`` arrow on the wire;
- the state after a request tells what the server answered: a result, ``input_required`` (SEP-2322), a
  JSON-RPC error (``-32020`` included), or no answer at all (``--x``: transport or protocol failure).

For a run of the input machine (``InputEvent``, specs/input.md), the same notes, and on the wire: for the
input rounds of ``prompts/get`` or ``resources/read``, the request that drew the first ``input_required``,
each resend and each answer; for a legacy server request, the server's request and the client's answer (a
result, a JSON-RPC error, or ``--x`` when it could not be sent).

For a request through the gate (``GateEvent``, specs/gate.md), three participants, ``Client``, ``Gate`` and
``Upstream``: the request arriving, the ``tools/list`` a run that learns sends, the request passed on and its
answer, or the gate's refusal with its status and reason; each state a note over ``Gate``.

For a member of a client group (``MemberEvent``, specs/group.md), its run is every status change of that member
(its id is ``group:NAME``: member events belong to no call): ``Group`` and the member's server, a connect arrow for
each ``connecting``, the server's answer (``connected``, or ``--x`` with the error), and a child's exit or a server
gone as a ``--x`` arrow.

``mcpfsm trace EVENTS.jsonl`` is the command-line front end.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from .._core.events import CallEvent
from .._core.events.gate import GateEvent
from .._core.events.group import MemberEvent
from .._core.events.input import InputEvent

__all__ = [
    "parse_events",
    "parse_records",
    "run_id",
    "select_call",
    "sequence_diagram",
    "servers_of",
    "summary_by_server",
]

# Mermaid reads `;` as a statement separator and `#…;` as an entity code, and renders message text
# as HTML, so these characters are written as Mermaid entity codes (`#59;` is `;`). Line breaks
# would end the statement, so control characters become spaces.
_ESCAPES: Final[Mapping[int, str]] = {
    ord("#"): "#35;",
    ord(";"): "#59;",
    ord("<"): "#lt;",
    ord(">"): "#gt;",
    ord("&"): "#amp;",
    ord('"'): "#quot;",
    ord("%"): "#37;",
    **{code: " " for code in (*range(0x00, 0x20), 0x7F)},
}
_BREAK: Final = "<br/>"
_REQUEST_STATES: Final = frozenset({"sending", "resending", "retrying", "retry_resending"})
_REQUIRED: Final = ("call_id", "seq", "tool", "state", "attempt", "at", "elapsed")
_DRAWN: Final = frozenset({"tool-call", InputEvent.MACHINE, GateEvent.MACHINE, MemberEvent.MACHINE})


def run_id(event: CallEvent | Mapping[str, Any]) -> str:
    """The id of the run an event (or its record) belongs to: its ``call_id``, or ``group:NAME`` for a member's."""
    if isinstance(event, CallEvent):
        return event.call_id if event.call_id is not None else f"{event.machine}:{event.server}"
    call_id, machine, server = event.get("call_id"), event.get("machine"), event.get("server")
    return str(call_id) if call_id is not None else f"{machine}:{server}"


def _text(value: object) -> str:
    return str(value).translate(_ESCAPES)


def _lines(*parts: str) -> str:
    return _BREAK.join(_text(part) for part in parts)


def _error_text(error: Mapping[str, Any] | None) -> str:
    if not error:
        return "error"
    code = error.get("code")
    message = error.get("message") or ""
    kind = error.get("type") or "error"
    if isinstance(code, int):
        return f"error {code}: {message}"
    return f"{kind}: {message}"


def _reply(event: CallEvent) -> str | None:
    """The Server→Client arrow for the request the previous state sent, judged by ``event``."""
    previous, trigger = event.previous, event.trigger
    if previous in _REQUEST_STATES:
        if trigger == "answered":
            return "    Server-->>Client: result"
        if trigger in ("input_required", "rounds_exhausted"):
            return "    Server-->>Client: input_required"
        if trigger in ("mismatched", "errored"):
            answered = event.error is not None and isinstance(event.error.get("code"), int)
            arrow = "-->>" if answered else "--x"
            return f"    Server{arrow}Client: {_lines(_error_text(event.error))}"
        return None
    if previous == "relisting":
        if trigger == "relisted":
            return f"    Server-->>Client: {_lines(f'tools: {event.tool!r} listed')}"
        if trigger == "vanished":
            return f"    Server-->>Client: {_lines(f'tools: {event.tool!r} not listed')}"
        if trigger == "relist_failed":
            return "    Server--xClient: tools/list failed"
    return None


def _note(event: CallEvent) -> str:
    title = event.state if event.trigger is None else f"{event.state} ({event.trigger})"
    if event.state in ("failed", "cancelled") and event.error is not None:
        return f"    Note over Client: {_lines(title, _error_text(event.error))}"
    if event.input_requests is not None:
        asked = [f"{key}: {method}" for key, method in event.input_requests.items()] or ["nothing (state only)"]
        heading = f"{title}, round {event.round}" if event.round else title
        return f"    Note over Client: {_lines(heading, *asked)}"
    if event.input_responses is not None:
        answers = [f"{key} = {json.dumps(value, ensure_ascii=False)}" for key, value in event.input_responses.items()]
        return f"    Note over Client: {_lines(title, *answers)}"
    return f"    Note over Client: {_lines(title)}"


def _request(event: CallEvent) -> str | None:
    if event.state in _REQUEST_STATES:
        headers = event.headers or {}
        label = [f"tools/call {event.tool} (attempt {event.attempt})"]
        if event.state in ("resending", "retry_resending") or event.round:
            label = [f"tools/call {event.tool} (attempt {event.attempt}, round {event.round} answers)"]
        label += [f"{name}: {value}" for name, value in headers.items()]
        return f"    Client->>Server: {_lines(*label)}"
    if event.state == "relisting":
        return "    Client->>Server: tools/list"
    return None


def _input_wire(event: InputEvent, first: InputEvent) -> tuple[list[str], list[str]]:
    """The arrows drawn before and after the note of one event of an input run."""
    if first.round == 0:
        # A legacy server request (MCP 2025-11-25): the server asks; the state the client's answer ends in
        # follows the answer.
        if event.seq == first.seq:
            return [f"    Server->>Client: {_lines(f'{event.request} (id {event.target})')}"], []
        if event.trigger == "answered":
            return ["    Client->>Server: result"], []
        if event.trigger in ("refused", "input_failed"):
            code = (event.error or {}).get("code")
            # A handler that raised anything but an RpcError is answered -32603, its text withheld.
            return [f"    Client->>Server: {_lines(f'error {code if isinstance(code, int) else -32603}')}"], []
        if event.trigger == "errored":
            return ["    Client--xServer: answer not sent"], []
        return [], []
    # The input rounds (SEP-2322) of a request that is not a tool call.
    request = f"{event.request} {event.target!r}"
    before: list[str] = []
    if event.seq == first.seq:
        before = [f"    Client->>Server: {_lines(request)}", "    Server-->>Client: input_required"]
    elif (reply := _reply(event)) is not None:
        before = [reply]  # the answer to the resend, drawn as a tool call's is
    after: list[str] = []
    if event.state == "resending":
        after = [f"    Client->>Server: {_lines(f'{request} (round {event.round} answers)')}"]
    return before, after


def sequence_diagram(events: Iterable[CallEvent]) -> str:
    """Draw one run's events as a Mermaid ``sequenceDiagram`` (see specs/tool-call.md, specs/input.md).

    Events are ordered by ``seq``; the text is deterministic and ends with a newline. Header
    values and error messages are escaped with Mermaid entity codes (``;`` → ``#59;``), so any
    recorded value renders as text.

    Raises:
        ValueError: ``events`` is empty or holds events of more than one call.
    """
    ordered = sorted(events, key=lambda event: event.seq)
    if not ordered:
        raise ValueError("no events to draw")
    call_ids = {run_id(event) for event in ordered}
    if len(call_ids) > 1:
        raise ValueError(f"events of {len(call_ids)} calls given; draw one call at a time")
    first = ordered[0]
    if isinstance(first, MemberEvent):
        return _member_diagram(ordered)
    if isinstance(first, InputEvent):
        return _input_diagram([event for event in ordered if isinstance(event, InputEvent)], first)
    if isinstance(first, GateEvent):
        return _gate_diagram([event for event in ordered if isinstance(event, GateEvent)])
    lines = [
        "sequenceDiagram",
        f"    %% mcpfsm tool call {_text(first.call_id)} of {_text(first.tool)}, drawn by `mcpfsm trace`",
        "    participant Client",
        _server_participant(first),
    ]
    for event in ordered:
        reply = _reply(event)
        if reply is not None:
            lines.append(reply)
        lines.append(_note(event))
        request = _request(event)
        if request is not None:
            lines.append(request)
    return "\n".join(lines) + "\n"


def _input_diagram(events: Sequence[InputEvent], first: InputEvent) -> str:
    lines = [
        "sequenceDiagram",
        f"    %% mcpfsm input run {_text(first.call_id)} of {_text(first.request)} {_text(first.target)}"
        + (f" (tool {_text(first.tool)})" if first.tool else "")
        + ", drawn by `mcpfsm trace`",
        "    participant Client",
        _server_participant(first),
    ]
    for event in events:
        before, after = _input_wire(event, first)
        lines += [*before, _note(event), *after]
    return "\n".join(lines) + "\n"


def _gate_subject(events: Sequence[GateEvent]) -> str:
    # What the request was, once the gate parsed it: "tools/call execute-sql"; "a request" before (legacy, refused).
    for event in events:
        if event.method:
            return f"{event.method} {event.name}" if event.name else event.method
    return "a request"


def _gate_wire(event: GateEvent, subject: str) -> tuple[list[str], list[str]]:
    """The arrows drawn before and after the note of one event of a gate run."""
    if event.previous is None:
        return [f"    Client->>Gate: {_lines(subject)}"], []
    if event.state == "learning":
        return [], ["    Gate->>Upstream: tools/list"]
    if event.trigger == "learned":
        return ["    Upstream-->>Gate: tools/list result"], []
    if event.trigger == "unlearned":
        return ["    Upstream--xGate: tools/list failed"], []
    if event.state in ("forwarded", "reported"):
        passed = {"legacy": f"{subject} (legacy: not verified)", "reported": f"{subject} (a mismatch, reported)"}
        return [
            f"    Gate->>Upstream: {_lines(passed.get(str(event.trigger), subject))}",
            "    Upstream-->>Gate: answer",
            "    Gate-->>Client: answer",
        ], []
    if event.state == "rejected":
        said = [f"HTTP {event.status}" if event.status is not None else "refused"]
        return [f"    Gate-->>Client: {_lines(*said, *([event.reason] if event.reason else []))}"], []
    if event.state == "cancelled":
        return ["    Client--xGate: gone"], []
    return [], []


def _gate_note(event: GateEvent) -> str:
    title = event.state if event.trigger is None else f"{event.state} ({event.trigger})"
    if event.state == "reported" and event.header is not None:
        return f"    Note over Gate: {_lines(title, event.header)}"
    return f"    Note over Gate: {_lines(title)}"


def _gate_diagram(events: Sequence[GateEvent]) -> str:
    subject = _gate_subject(events)
    lines = [
        "sequenceDiagram",
        f"    %% mcpfsm gate run {_text(events[0].call_id)} of {_text(subject)}, drawn by `mcpfsm trace`",
        "    participant Client",
        "    participant Gate",
        "    participant Upstream",
    ]
    for event in events:
        before, after = _gate_wire(event, subject)
        lines += [*before, _gate_note(event), *after]
    return "\n".join(lines) + "\n"


def _member_diagram(events: Sequence[CallEvent]) -> str:
    server = events[0].server or ""
    lines = [
        "sequenceDiagram",
        f"    %% mcpfsm group member {_text(server)}, drawn by `mcpfsm trace`",
        "    participant Group",
        f"    participant Server as {_text(server)}",
    ]
    for event in events:
        if event.trigger in ("connected", "refused"):
            arrow = "-->>" if event.trigger == "connected" else "--x"
            said = "connected" if event.trigger == "connected" else _error_text(event.error)
            lines.append(f"    Server{arrow}Group: {_lines(said)}")
        elif event.trigger in ("exited", "broke"):
            lines.append(f"    Server--xGroup: {_lines(event.trigger, _error_text(event.error))}")
        title = event.state if event.trigger is None else f"{event.state} ({event.trigger})"
        lines.append(f"    Note over Group: {_lines(title)}")
        if event.state == "connecting":
            lines.append(f"    Group->>Server: {_lines(f'connect (attempt {event.attempt})')}")
        elif event.state == "disabled":
            lines.append("    Group-xServer: close")
    return "\n".join(lines) + "\n"


def _server_participant(first: CallEvent) -> str:
    # A member of a client group: the server participant shows the member's name (CallEvent.server).
    if first.server is None:
        return "    participant Server"
    return f"    participant Server as {_text(first.server)}"


def servers_of(events: Iterable[CallEvent]) -> list[str | None]:
    """The servers a trail's drawable runs came from (``CallEvent.server``), in order of first appearance."""
    return list(dict.fromkeys(event.server for event in events if event.machine in _DRAWN))


def summary_by_server(events: Sequence[CallEvent]) -> str:
    """A multi-server trail grouped by server: per server, each run's id, machine, tool and last state.

    A run's line is ``CALL_ID  MACHINE  TOOL-OR-REQUEST  LAST-STATE (N events)``; runs of no server (a client
    outside a group) come under ``(no server)``. Ends with a newline.

    Raises:
        ValueError: there are no tool-call, input or gate events.
    """
    runs: dict[str | None, dict[str, list[CallEvent]]] = {}
    for event in events:
        if event.machine in _DRAWN:
            runs.setdefault(event.server, {}).setdefault(run_id(event), []).append(event)
    if not runs:
        raise ValueError("no events recorded")
    lines = []
    for server, calls in runs.items():
        lines.append(
            f"server {server}: {len(calls)} run{'s' if len(calls) != 1 else ''}"
            if server
            else f"(no server): {len(calls)} run{'s' if len(calls) != 1 else ''}"
        )
        for call_id, run in calls.items():
            last = max(run, key=lambda event: event.seq)
            if isinstance(last, InputEvent):
                subject = f"{last.request} {last.target}"
            elif isinstance(last, GateEvent):
                subject = _gate_subject([each for each in run if isinstance(each, GateEvent)])
            elif isinstance(last, MemberEvent):
                subject = "member"
            else:
                subject = last.tool
            lines.append(f"  {call_id}  {last.machine}  {subject}  {last.state} ({len(run)} events)")
    return "\n".join(lines) + "\n"


def parse_records(text: str) -> list[tuple[dict[str, Any], CallEvent]]:
    """Read JSON Lines audit records (one :meth:`CallEvent.to_json` per line), each with the event it reads back as.

    The one reader of trails (``mcpfsm trace``, the trail viewer): blank lines are skipped; each record is kept
    whole beside its event, so fields this version does not know (a ``server``, a task's poll) are not lost.

    Raises:
        ValueError: a line is not JSON or not a CallEvent record; the message starts with
            ``line N:`` (1-based).
    """
    records: list[tuple[dict[str, Any], CallEvent]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"line {number}: not JSON ({exc.msg} at column {exc.colno})") from exc
        if not isinstance(record, dict):
            raise ValueError(f"line {number}: not a CallEvent record (a JSON {type(record).__name__})")
        missing = [name for name in _REQUIRED if name not in record]
        if missing:
            raise ValueError(f"line {number}: not a CallEvent record (no {', '.join(map(repr, missing))})")
        try:
            records.append((record, CallEvent.from_dict(record)))
        except ValueError as exc:
            raise ValueError(f"line {number}: {exc}") from exc
    return records


def parse_events(text: str) -> list[CallEvent]:
    """The events of JSON Lines audit records (:func:`parse_records`); blank lines are skipped.

    Raises:
        ValueError: a line is not JSON or not a CallEvent record; the message starts with
            ``line N:`` (1-based).
    """
    return [event for _, event in parse_records(text)]


def select_call(
    events: Sequence[CallEvent], call_id: str | None = None, *, server: str | None = None
) -> list[CallEvent]:
    """The events of run ``call_id``, or of the last run recorded when ``call_id`` is ``None``.

    A run is a tool call, a run of the input machine or a request through the gate (its ``call_id``), or a group
    member's status changes (``group:NAME``); authorization flows and tasks are skipped.
    With ``server``, only the runs of that member of a client group count (``CallEvent.server``).

    Raises:
        ValueError: there are no events, none of run ``call_id``, or none of ``server``.
    """
    # An audit log also holds the authorization flows' events (machine "authorization"); a trace shows
    # tool calls and input runs.
    events = [event for event in events if event.machine in _DRAWN]
    if not events:
        raise ValueError("no events recorded")
    if server is not None:
        known_servers = ", ".join(str(name) for name in servers_of(events))
        events = [event for event in events if event.server == server]
        if not events:
            raise ValueError(f"no events of server {server!r} (servers recorded: {known_servers})")
    wanted = run_id(events[-1]) if call_id is None else call_id
    chosen = [event for event in events if run_id(event) == wanted]
    if not chosen:
        known = ", ".join(dict.fromkeys(run_id(event) for event in events))
        raise ValueError(f"no events of call {wanted!r} (calls recorded: {known})")
    return chosen

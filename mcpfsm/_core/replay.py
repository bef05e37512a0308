"""What a replay answers, and when: the matching rules of a cassette and its faults (docs/testing.md).

Pure: no I/O, no clock. :class:`ReplayBook` holds one replay's state (the exchanges used, the faults left, the
sessions it opened) and turns each request into an :class:`Answer`: a status, headers and messages to send, or
a connection to drop, after a delay to wait. The in-process transport (``mcpfsm._transports.replay``), the HTTP
server of ``mcpfsm.testing.serve`` and ``mcpfsm replay --stdio`` each carry the answers out their own way.

The rules, in the order they apply to a request:

1. a message that is not a JSON-RPC 2.0 object is refused (-32600); an answer of the client's (to a server
   request) is accepted with 202 and nothing else;
2. a ``delay`` fault holds back whatever the request is then answered with;
3. a request on a session this replay did not open, or closed, gets 404 (MCP 2025-11-25 "Session
   Management"); a ``session_expired`` fault closes the current session with the same 404;
4. ``drop_after_request`` and ``http_error`` answer a request of their method; ``mismatch_once`` answers its
   tool's call with -32020 and arms the next listing and the retry;
5. the request matches the first unused recorded exchange with its :class:`~mcpfsm._core.cassette.MatchKey`
   (in ``strict`` mode, only the next one in recorded order, lifecycle and listing requests and notifications
   exempt); once every exchange of a lifecycle or listing kind is used, the last one used answers again, and a
   lifecycle request that matches nothing exactly is answered by the first (then last) recorded one of its
   method (they describe the client, which may be another one);
6. a ``tools/call`` whose ``Mcp-Param-*`` headers differ from the recorded call's is answered 400 with -32020
   naming the header, as the recorded server would (SEP-2243);
7. what matches nothing: ``ping`` is answered ``{}``, a notification is accepted, ``server/discover`` is
   answered as the recorded era's server answers it (a legacy one with 400 and -32601, a modern one with its
   own version as the only one supported), ``initialize`` on a modern cassette with 400 and -32022, and
   anything else with -32603 ``no recorded exchange for …``.

A request refused (6) or answered by a fault (3, 4) does not use up its exchange. The answer to a matched
request carries the request's own id (and, in progress notifications, its own ``progressToken``), and the
session id this replay gave the session.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from .cassette import Cassette, Exchange, MatchKey, match_key, mirrored, target_of
from .constants import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MODERN_VERSION,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from .faults import HTTP_ONLY, Fault

__all__ = ["ANSWER_WAIT", "LIFECYCLE", "LISTINGS", "MODES", "Answer", "Mode", "ReplayBook", "server_request_id"]

Mode = Literal["any", "strict"]
"""``"any"``: requests match in any order; ``"strict"``: besides, in the order recorded."""

MODES: Final = ("any", "strict")

LIFECYCLE: Final = frozenset({"initialize", "notifications/initialized", "server/discover"})
"""Requests that set a session up: replayable any number of times, exempt from strict order."""

LISTINGS: Final = frozenset({"tools/list", "resources/list", "resources/templates/list", "prompts/list"})
"""Listings: replayable any number of times, exempt from strict order."""

ANSWER_WAIT: Final = 30.0
"""Seconds a replay waits for the client's answer to a recorded server request (an elicitation, say) before it
goes on with the stream, as the recorded server waited for it."""

_SESSION: Final = "mcp-session-id"
_CHANGED: Final = "-Changed"
_SHOWN: Final = 60

_CAPABILITY_OF: Final = {
    "tools/": "tools",
    "resources/": "resources",
    "prompts/": "prompts",
    "completion/": "completions",
    "logging/": "logging",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """What to do with one request.

    Attributes:
        status: the HTTP status to answer with; ``None`` on stdio.
        headers: the response headers (``Content-Type``, ``Mcp-Session-Id``, ``WWW-Authenticate``).
        messages: the JSON-RPC messages to send, in order, the response last; empty: no body.
        event_stream: send them as ``text/event-stream`` (else one ``application/json`` body).
        delay: seconds to wait before answering.
        drop: close the connection without answering (after ``delay``).
        seq: the recorded exchange that answers, or ``None`` (a fault, or an answer of the replay's own).
        note: what answered, for logs: ``"exchange 3"``, a fault, ``"no match"``.
    """

    status: int | None = None
    headers: tuple[tuple[str, str], ...] = ()
    messages: tuple[Any, ...] = ()
    event_stream: bool = False
    delay: float = 0.0
    drop: bool = False
    seq: int | None = None
    note: str = ""


@dataclass(slots=True)
class _Armed:
    fault: Fault
    left: int


@dataclass(slots=True)
class _Mismatch:
    # What a fired mismatch_once has still to do: change the next listing, let the retry through.
    listing: dict[str, tuple[str, ...]] = field(default_factory=dict)
    retry: set[str] = field(default_factory=set)


def _is_lifecycle_or_listing(method: str) -> bool:
    return method in LIFECYCLE or method in LISTINGS


class ReplayBook:
    """One replay of ``cassette``: its state, and the :meth:`answer` to each request (see the module docstring).

    Args:
        cassette: the recorded session.
        mode: ``"any"`` or ``"strict"``.
        faults: the faults to inject, each fired as many times as it says.

    Raises:
        ValueError: an unknown ``mode``, something in ``faults`` that is not a :class:`Fault`, or a fault that
            needs HTTP (``http_error``, ``session_expired``) on a stdio cassette.
    """

    def __init__(self, cassette: Cassette, *, mode: str = "any", faults: Sequence[Fault] = ()) -> None:
        """Prepare the replay; nothing is answered until :meth:`answer`."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {list(MODES)}, got {mode!r}")
        for fault in faults:
            if not isinstance(fault, Fault):
                raise ValueError(f"faults must be mcpfsm.testing.Fault values, got {fault!r}")
            if fault.kind in HTTP_ONLY and cassette.transport != "http":
                raise ValueError(f"{fault} needs HTTP; {cassette.source} was recorded over stdio")
        self.cassette = cassette
        self.mode = mode
        self._http = cassette.transport == "http"
        self._armed = [_Armed(fault, fault.times) for fault in faults]
        self._used: set[int] = set()
        self._last: dict[MatchKey, Exchange] = {}
        self._unused: dict[MatchKey, deque[Exchange]] = {}
        """The exchanges not used yet, by key, in file order: a request finds its match in constant time."""
        for exchange in cassette.exchanges:
            self._unused.setdefault(exchange.key, deque()).append(exchange)
        self._ordered = [
            e for e in cassette.exchanges if not _is_lifecycle_or_listing(e.method) and "id" in e.message
        ]
        self._ordered_keys = frozenset(e.key for e in self._ordered)
        self._cursor = 0
        self._mismatch = _Mismatch()
        self._recorded_session = next(
            (
                value
                for exchange in cassette.exchanges
                for name, value in (exchange.response_headers or {}).items()
                if name.lower() == _SESSION
            ),
            None,
        )
        self._live: dict[str, int] = {}
        """The sessions this replay opened, with the requests counted on each (``session_expired``)."""
        self._sessions = 0
        self._sessionless = 0
        """Requests counted on the one implicit session of a replay without session ids."""

    @property
    def modern(self) -> bool:
        """The cassette was recorded in the 2026-07-28 era."""
        return self.cassette.protocol == MODERN_VERSION

    # --- the rules ---------------------------------------------------------------------------------------

    def answer(self, message: Any, headers: Mapping[str, str] | None = None) -> Answer:
        """The answer to one JSON-RPC message and the headers it came with (``None`` on stdio)."""
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return self._error(None, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message", status=400)
        method = message.get("method")
        if not isinstance(method, str):
            return Answer(status=202 if self._http else None, note="an answer of the client's")
        sent = {name.lower(): value for name, value in (headers or {}).items()}
        wait = self._take("delay", method)
        answer = self._answer(message, method, sent if self._http else None, headers)
        if wait is not None:
            return _replaced(answer, delay=wait.seconds)
        return answer

    def _answer(
        self, message: dict[str, Any], method: str, sent: dict[str, str] | None, headers: Mapping[str, str] | None
    ) -> Answer:
        request_id = message.get("id")
        is_request = "id" in message
        if sent is not None and is_request:
            refused = self._session_check(method, request_id, sent)
            if refused is not None:
                return refused
        if is_request:
            drop = self._take("drop_after_request", method)
            if drop is not None:
                return Answer(drop=True, note=str(drop))
            error = self._take("http_error", method)
            if error is not None:
                return Answer(status=error.status, note=str(error))
            if method == "tools/call":
                mismatch = self._mismatch_fault(message, request_id)
                if mismatch is not None:
                    return mismatch
        exchange = self._match(match_key(message, headers), method)
        if exchange is None:
            return self._unmatched(message, method, request_id)
        if method == "tools/call" and sent is not None:
            refused = self._mirror_check(message, exchange, sent, request_id)
            if refused is not None:
                return refused
        self._use(exchange)
        return self._recorded(exchange, message, sent)

    def _take(self, kind: str, method: str) -> Fault | None:
        for armed in self._armed:
            if armed.left > 0 and armed.fault.kind == kind and armed.fault.method == method:
                armed.left -= 1
                return armed.fault
        return None

    # --- sessions ----------------------------------------------------------------------------------------

    def _session_check(self, method: str, request_id: Any, sent: dict[str, str]) -> Answer | None:
        session = sent.get(_SESSION)
        if session is not None and self._recorded_session is not None and session not in self._live:
            return self._not_found(request_id, "the session is not one this replay opened, or it expired")
        if method == "initialize" or (session is None and self._recorded_session is not None):
            return None  # no session yet: nothing to expire (a replay without session ids has one, implicit)
        expiry = next(
            (armed for armed in self._armed if armed.left > 0 and armed.fault.kind == "session_expired"), None
        )
        if session is not None and session in self._live:
            self._live[session] += 1
            count = self._live[session]
        else:
            self._sessionless += 1
            count = self._sessionless
        if expiry is None or count <= (expiry.fault.after or 0):
            return None
        expiry.left -= 1
        if session is not None:
            self._live.pop(session, None)
        else:
            self._sessionless = 0
        return self._not_found(request_id, f"{expiry.fault} fired")

    def close_session(self, session: str) -> bool:
        """End a session this replay opened (the client's ``DELETE``); whether it was open."""
        return self._live.pop(session, None) is not None

    def _not_found(self, request_id: Any, note: str) -> Answer:
        body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": INVALID_REQUEST, "message": "Session not found"}}
        return Answer(status=404, headers=(("Content-Type", "application/json"),), messages=(body,), note=note)

    def _open_session(self) -> str | None:
        # Each initialize answered opens a session of its own: the first takes the recorded id, later ones a
        # derived one, so concurrent clients and renewals never share a session.
        if self._recorded_session is None:
            self._sessionless = 0
            return None
        self._sessions += 1
        session = self._recorded_session if self._sessions == 1 else f"{self._recorded_session}-{self._sessions}"
        self._live[session] = 0
        return session

    # --- mismatch_once -----------------------------------------------------------------------------------

    def _mismatch_fault(self, message: dict[str, Any], request_id: Any) -> Answer | None:
        tool = target_of("tools/call", message.get("params"))
        for armed in self._armed:
            if armed.left > 0 and armed.fault.kind == "mismatch_once" and armed.fault.tool == tool:
                armed.left -= 1
                assert tool is not None
                path = self._first_annotated(tool)
                if path is not None:
                    self._mismatch.listing[tool] = path
                    self._mismatch.retry.add(tool)
                text = f"Mcp-Param header mismatch for tool {tool!r} ({armed.fault}: the tool's schema changed)"
                return self._error(request_id, HEADER_MISMATCH, text, status=400, note=str(armed.fault))
        return None

    def _first_annotated(self, tool: str) -> tuple[str, ...] | None:
        # The path of the tool's first annotated property in the last recorded listing that shows it.
        for exchange in reversed(self.cassette.exchanges):
            if exchange.method != "tools/list":
                continue
            definition = _listed_tool(exchange.messages, tool)
            if definition is not None:
                return _first_annotated_path(definition.get("inputSchema"))
        return None

    def _changed_listing(self, messages: tuple[Any, ...]) -> tuple[Any, ...]:
        pending = self._mismatch.listing
        if not pending:
            return messages
        changed = copy.deepcopy(list(messages))
        final = changed[-1] if changed else None
        result = final.get("result") if isinstance(final, dict) else None
        tools = result.get("tools") if isinstance(result, dict) else None
        for definition in tools if isinstance(tools, list) else ():
            name = definition.get("name") if isinstance(definition, dict) else None
            if name in pending:
                _change_token(definition.get("inputSchema"), pending.pop(name))
        return tuple(changed)

    # --- matching ----------------------------------------------------------------------------------------

    def _match(self, key: MatchKey, method: str) -> Exchange | None:
        exchanges = self.cassette.exchanges
        repeatable = _is_lifecycle_or_listing(method)
        if self.mode == "strict" and not repeatable and key in self._ordered_keys:
            if self._cursor < len(self._ordered) and self._ordered[self._cursor].key == key:
                return self._ordered[self._cursor]
            return None
        waiting = self._unused.get(key)
        found = waiting[0] if waiting else None
        if found is not None or not repeatable:
            return found
        if key in self._last:
            return self._last[key]
        if method in LIFECYCLE:
            # Another client describes itself otherwise (capabilities, clientInfo): the recorded lifecycle answers.
            same = [e for e in exchanges if e.method == method]
            unused = next((e for e in same if e.line not in self._used), None)
            return unused if unused is not None else (self._last_of(method) or (same[-1] if same else None))
        return None

    def _last_of(self, method: str) -> Exchange | None:
        found = [e for e in self._last.values() if e.method == method]
        return max(found, key=lambda e: e.line) if found else None

    def _use(self, exchange: Exchange) -> None:
        self._used.add(exchange.line)
        waiting = self._unused.get(exchange.key)
        if waiting and waiting[0] is exchange:
            waiting.popleft()
        elif waiting and exchange in waiting:
            waiting.remove(exchange)  # strict order, or a lifecycle request matched by its method
        self._last[exchange.key] = exchange
        if self._cursor < len(self._ordered) and self._ordered[self._cursor] is exchange:
            self._cursor += 1

    def _mirror_check(
        self, message: dict[str, Any], exchange: Exchange, sent: dict[str, str], request_id: Any
    ) -> Answer | None:
        tool = target_of("tools/call", message.get("params"))
        if tool in self._mismatch.retry:
            # The retry after a mismatch_once gets the recorded answer whatever it mirrors.
            self._mismatch.retry.discard(tool)
            return None
        recorded = mirrored(exchange.request_headers)
        now = mirrored(sent)
        if recorded == now:
            return None
        differing = sorted({name for name, _ in recorded ^ now})
        name = differing[0]
        was = dict(recorded).get(name)
        got = dict(now).get(name)
        spelled = next(
            (n for n in (*(exchange.request_headers or {}), *sent) if n.lower() == name), name
        )
        text = (
            f"{_title(spelled)} does not match the recorded call of {tool!r}: sent {_shown(got)},"
            f" recorded {_shown(was)}"
        )
        return self._error(request_id, HEADER_MISMATCH, text, status=400, note="mirroring check")

    # --- answers -----------------------------------------------------------------------------------------

    def _recorded(self, exchange: Exchange, message: dict[str, Any], sent: dict[str, str] | None) -> Answer:
        messages = _renumbered(exchange, message)
        if exchange.method == "tools/list":
            messages = self._changed_listing(messages)
        if sent is None:
            return Answer(messages=messages, seq=exchange.seq, note=f"exchange {exchange.seq}")
        recorded = dict(exchange.response_headers or {})
        session = sent.get(_SESSION)
        if exchange.method == "initialize" and _is_result(messages):
            session = self._open_session()
        headers: list[tuple[str, str]] = []
        content_type = None
        for name, value in recorded.items():
            lower = name.lower()
            if lower == _SESSION:
                if session is not None:
                    headers.append((name, session))
            elif lower == "content-type":
                content_type = value
                headers.append((name, value))
            else:
                headers.append((name, value))
        status = exchange.status if exchange.status is not None else 200
        if content_type is None and messages and status != 202:
            content_type = "application/json"
            headers.append(("Content-Type", content_type))
        stream = content_type is not None and content_type.split(";")[0].strip().lower() == "text/event-stream"
        return Answer(
            status=status,
            headers=tuple(headers),
            messages=messages,
            event_stream=stream,
            seq=exchange.seq,
            note=f"exchange {exchange.seq}",
        )

    def _unmatched(self, message: dict[str, Any], method: str, request_id: Any) -> Answer:
        if "id" not in message:
            return Answer(status=202 if self._http else None, note="a notification not recorded")
        if method == "ping":
            return self._result(request_id, {}, note="ping")
        if method == "server/discover" and not self.modern:
            return self._error(request_id, METHOD_NOT_FOUND, "Method not found", status=400, note="legacy era")
        if method == "server/discover":
            capabilities = self._capabilities()
            result = {"resultType": "complete", "supportedVersions": [MODERN_VERSION], "capabilities": capabilities}
            return self._result(request_id, result, note="modern era")
        if method == "initialize" and self.modern:
            params = message.get("params")
            offered = params.get("protocolVersion") if isinstance(params, dict) else None
            data = {"supported": [MODERN_VERSION], "requested": offered if isinstance(offered, str) else ""}
            return self._error(
                request_id, UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", status=400, data=data,
                note="modern era",
            )
        return self._error(request_id, INTERNAL_ERROR, self._no_match(message, method), note="no match")

    def _no_match(self, message: dict[str, Any], method: str) -> str:
        target = target_of(method, message.get("params"))
        text = f"no recorded exchange for {method}" + ("" if target is None else f" {target!r}")
        source = self.cassette.source
        if self.mode == "strict" and self._cursor < len(self._ordered):
            upcoming = self._ordered[self._cursor]
            named = target_of(upcoming.method, upcoming.message.get("params"))
            upcoming_text = upcoming.method + ("" if named is None else f" {named!r}")
            return f"{text} in strict order in {source} (the next recorded request is {upcoming_text})"
        same = [
            e
            for e in self.cassette.exchanges
            if e.method == method and target_of(method, e.message.get("params")) == target
        ]
        if not same:
            return f"{text} in {source}"
        left = sum(1 for e in same if e.line not in self._used)
        if left:
            return f"{text} with these params in {source} ({left} recorded with other params)"
        return f"{text} left in {source} (all {len(same)} recorded were used)"

    def _capabilities(self) -> dict[str, Any]:
        # What the recorded session shows the server offered: a family of methods answered means its capability.
        found: dict[str, Any] = {}
        for exchange in self.cassette.exchanges:
            for prefix, capability in _CAPABILITY_OF.items():
                if exchange.method.startswith(prefix):
                    found[capability] = {}
        return found

    def _result(self, request_id: Any, result: Any, *, note: str) -> Answer:
        body = {"jsonrpc": "2.0", "id": request_id, "result": result}
        return self._body(200, body, note)

    def _error(
        self, request_id: Any, code: int, text: str, *, status: int = 200, data: Any = None, note: str = ""
    ) -> Answer:
        error: dict[str, Any] = {"code": code, "message": text}
        if data is not None:
            error["data"] = data
        return self._body(status, {"jsonrpc": "2.0", "id": request_id, "error": error}, note)

    def _body(self, status: int, body: dict[str, Any], note: str) -> Answer:
        if not self._http:
            return Answer(messages=(body,), note=note)
        return Answer(status=status, headers=(("Content-Type", "application/json"),), messages=(body,), note=note)


def server_request_id(message: Any) -> Any:
    """The id of ``message`` when it is a server-to-client request (a stream waits for its answer), else ``None``."""
    if isinstance(message, dict) and isinstance(message.get("method"), str) and "id" in message:
        return message["id"]
    return None


def _replaced(answer: Answer, *, delay: float) -> Answer:
    return Answer(
        status=answer.status,
        headers=answer.headers,
        messages=answer.messages,
        event_stream=answer.event_stream,
        delay=delay,
        drop=answer.drop,
        seq=answer.seq,
        note=answer.note,
    )


def _is_result(messages: tuple[Any, ...]) -> bool:
    final = messages[-1] if messages else None
    return isinstance(final, dict) and isinstance(final.get("result"), dict)


def _renumbered(exchange: Exchange, message: dict[str, Any]) -> tuple[Any, ...]:
    # The recorded answer, with the id of the request it now answers, and its progressToken in progress.
    recorded_id = exchange.message.get("id")
    request_id = message.get("id")
    recorded_token = _progress_token(exchange.message)
    token = _progress_token(message)
    out: list[Any] = []
    for item in exchange.messages:
        if not isinstance(item, dict):
            out.append(item)
            continue
        if "method" not in item and "id" in item and item.get("id") == recorded_id and recorded_id != request_id:
            item = {**item, "id": request_id}
        elif (
            item.get("method") == "notifications/progress"
            and recorded_token is not None
            and token is not None
            and token != recorded_token
            and isinstance(item.get("params"), dict)
            and item["params"].get("progressToken") == recorded_token
        ):
            item = {**item, "params": {**item["params"], "progressToken": token}}
        out.append(item)
    return tuple(out)


def _progress_token(message: Mapping[str, Any]) -> Any:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    return meta.get("progressToken") if isinstance(meta, Mapping) else None


def _listed_tool(messages: tuple[Any, ...], tool: str) -> dict[str, Any] | None:
    final = messages[-1] if messages else None
    result = final.get("result") if isinstance(final, dict) else None
    tools = result.get("tools") if isinstance(result, dict) else None
    for definition in tools if isinstance(tools, list) else ():
        if isinstance(definition, dict) and definition.get("name") == tool:
            return definition
    return None


def _first_annotated_path(schema: Any) -> tuple[str, ...] | None:
    # The first property carrying x-mcp-header, in properties order, depth first (through properties only).
    stack: list[tuple[Any, tuple[str, ...]]] = [(schema, ())]
    while stack:
        node, path = stack.pop()
        if not isinstance(node, dict):
            continue
        if path and "x-mcp-header" in node:
            return path
        properties = node.get("properties")
        if isinstance(properties, dict):
            stack.extend((child, (*path, name)) for name, child in reversed(list(properties.items())))
    return None


def _change_token(schema: Any, path: tuple[str, ...]) -> None:
    node = schema
    for name in path:
        properties = node.get("properties") if isinstance(node, dict) else None
        if not isinstance(properties, dict) or not isinstance(properties.get(name), dict):
            return
        node = properties[name]
    token = node.get("x-mcp-header")
    if isinstance(token, str):
        node["x-mcp-header"] = token + _CHANGED


def _title(name: str) -> str:
    # Mcp-Param-* names as the client sent them; a lower-case one gets its prefix's usual spelling.
    return "Mcp-Param-" + name[len("mcp-param-") :] if name.lower().startswith("mcp-param-") else name


def _shown(value: str | None) -> str:
    if value is None:
        return "nothing"
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."

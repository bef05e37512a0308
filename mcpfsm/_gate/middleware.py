"""``HeaderGate``: ASGI middleware that checks that each request's MCP headers tell the truth (docs/gate.md).

Pure ASGI (the shape of Starlette's ``middleware/``): it wraps an app, reads each HTTP request before the app does,
and either calls the app or answers itself; it names no event loop, so it runs under asyncio (uvicorn) and trio
(Hypercorn's trio worker) alike. What it does with one request, in order:

1. the caps, before anything is decoded: more than 64 ``mcp-`` header fields, or one longer than 8,192 bytes,
   is answered 431; a body longer than ``max_body`` 413 (read no further than the cap);
2. hop-by-hop fields are dropped (RFC 9110 §7.6.1): the app never sees them, and neither does the verifier;
3. the era: a request whose ``MCP-Protocol-Version`` is not 2026-07-28 is legacy: it is not verified and, with
   ``legacy="strip"``, goes on without its ``Mcp-Param-*`` fields (``"pass"``: as it came; ``"reject"``: 400);
4. the schema of the tool a ``tools/call`` names, from the book (:mod:`.book`); unknown, ``on_unknown`` says:
   ``"fetch"`` one ``tools/list`` from the wrapped app with the caller's ``Authorization``, ``"pass"`` go on with
   the standard headers checked only, ``"reject"`` 400;
5. the verdict (``mcpfsm.gate.verify``): a mismatch is answered 400 with JSON-RPC -32020 naming the header
   (``mode="report"`` forwards it and counts it); then ``policy`` sees the verified call and may refuse it with
   :class:`~mcpfsm.gate.GateRefusal`;
6. the app answers; a ``tools/list`` answer is learned before it is passed on, an upstream -32020 or a
   ``notifications/tools/list_changed`` forgets the server's listings (:mod:`.listing`).

A request the gate refuses never reaches the app. Requests other than POST carry no message: they get the caps,
the hop-by-hop rule and the legacy rule (a legacy stream's ``Mcp-Param-*`` fields are stripped; ``"reject"``
refuses one that names a legacy version or a legacy session) and go on.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, Literal

from .._core.gate_edge import (
    DEFAULT_MAX_BODY,
    as_text,
    end_to_end,
    error_body,
    field,
    header_caps,
    identity_of,
    request_version,
    without_params,
)
from .._core.gate_standin import GateRefusal, VerifiedCall, verify
from .._log import logger
from .asgi import App, BodyTooLarge, ClientGone, Message, Receive, Scope, Send, answer, read_body, replayed
from .book import Listing, SchemaBook, listing_of
from .listing import MAX_LEARNED, watched

__all__ = ["HeaderGate"]

Mode = Literal["verify", "report"]
OnUnknown = Literal["fetch", "pass", "reject"]
Legacy = Literal["strip", "pass", "reject"]

_JSON: Final = ((b"content-type", b"application/json"),)
_HEADER_MISMATCH: Final = -32020
_INVALID_REQUEST: Final = -32600
_MAX_PAGES: Final = 100
_META_PREFIX: Final = "io.modelcontextprotocol/"


class HeaderGate:
    """ASGI middleware that verifies each modern request's MCP headers against its body (docs/gate.md).

    Wrap the Starlette app of an MCP server (the official SDK's ``streamable_http_app()``, fastmcp's
    ``http_app()``) and serve the gate instead: ``uvicorn.run(HeaderGate(app))``.

    Args:
        app: the ASGI app to protect.
        mode: ``"verify"`` refuses a mismatch (400, JSON-RPC -32020); ``"report"`` forwards it and counts it in
            :attr:`stats` (a rollout mode).
        on_unknown: what a call to a tool with no known schema gets: ``"fetch"`` (one ``tools/list`` from ``app``
            with the caller's own ``Authorization``, single flight per server and identity), ``"pass"`` (the
            standard headers are checked, the server must check the rest) or ``"reject"`` (400, -32020).
        schemas: the path of a JSON file holding a ``tools/list`` result (``{"tools": [...]}``) or a whole
            JSON-RPC response carrying one: the schemas known from the start.
        store: a shared store (``FileStore``, ``RedisStore``) through which a fleet of gates shares what it
            learns, so that the fleet fetches each listing once per TTL.
        legacy: what happens to a legacy request (not 2026-07-28): ``"strip"`` its ``Mcp-Param-*`` headers
            removed, ``"pass"`` forwarded as is, ``"reject"`` 400 with JSON-RPC -32600.
        max_body: the largest request body accepted, in bytes (413 beyond).
        learn_ttl: seconds a learned listing without ``ttlMs`` is kept.
        policy: called with each verified modern call (a :class:`~mcpfsm.gate.VerifiedCall`); it may raise
            :class:`~mcpfsm.gate.GateRefusal` to answer the request itself.
        on_event: called with each ``GateEvent``.

    Raises:
        ValueError: an option out of its range, or a ``schemas`` file without a ``tools/list`` result.
        OSError: the ``schemas`` file cannot be read.
    """

    def __init__(
        self,
        app: App,
        *,
        mode: Mode = "verify",
        on_unknown: OnUnknown = "fetch",
        schemas: str | os.PathLike[str] | None = None,
        store: Any = None,
        legacy: Legacy = "strip",
        max_body: int = DEFAULT_MAX_BODY,
        learn_ttl: float = 3600,
        policy: Callable[[VerifiedCall], object] | None = None,
        on_event: Callable[[Any], object] | None = None,
    ) -> None:
        """Wrap ``app``; nothing is read, fetched or stored until the first request."""
        _choice("mode", mode, ("verify", "report"))
        _choice("on_unknown", on_unknown, ("fetch", "pass", "reject"))
        _choice("legacy", legacy, ("strip", "pass", "reject"))
        if not isinstance(max_body, int) or isinstance(max_body, bool) or max_body < 0:
            raise ValueError(f"max_body must be a number of bytes (an int, 0 or more), got {max_body!r}")
        if not isinstance(learn_ttl, (int, float)) or isinstance(learn_ttl, bool) or not learn_ttl > 0:
            raise ValueError(f"learn_ttl must be a positive number of seconds, got {learn_ttl!r}")
        self.app = app
        self.mode: Mode = mode
        self.on_unknown: OnUnknown = on_unknown
        self.legacy: Legacy = legacy
        self.max_body = max_body
        self.policy = policy
        self.on_event = on_event
        preload = _preloaded(schemas, float(learn_ttl)) if schemas is not None else None
        self.book = SchemaBook(learn_ttl=float(learn_ttl), store=store, preload=preload)
        """The schemas this gate knows (learned, fetched, preloaded)."""
        self._counts: Counter[str] = Counter({"forwarded": 0, "rejected": 0, "reported": 0})
        self._stats = MappingProxyType(self._counts)
        # The proxy's upstream names itself: the book's key for a server is the upstream's URL and the path.
        upstream = getattr(app, "upstream", None)
        self._origin = upstream if isinstance(upstream, str) else ""
        self._fetch_ids = 0

    def __repr__(self) -> str:
        return f"HeaderGate({self.app!r}, mode={self.mode!r}, on_unknown={self.on_unknown!r}, legacy={self.legacy!r})"

    @property
    def stats(self) -> Mapping[str, int]:
        """Counts since the gate was made: ``"forwarded"``, ``"rejected"``, ``"reported"`` and one key per reason.

        Every refusal counts as ``"rejected"`` and as ``"rejected:REASON"``; a mismatch forwarded in report mode
        counts as ``"reported"``, ``"reported:REASON"`` and ``"forwarded"``. A read-only view that stays current.
        """
        return self._stats

    # --- ASGI ------------------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Judge one HTTP request (see the module's description); other scopes go to the app untouched."""
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await self.app(scope, receive, self._lifespan_send(send))
        else:
            await self.app(scope, receive, send)

    def _lifespan_send(self, send: Send) -> Send:
        async def lifespan_send(message: Message) -> None:
            if message["type"] in ("lifespan.shutdown.complete", "lifespan.shutdown.failed"):
                self.book.loop.close()
            await send(message)

        return lifespan_send

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        fields = scope["headers"]
        exceeded = header_caps(fields)
        if exceeded is not None:
            await self._refuse(send, 431, exceeded.reason, error_body(None, _INVALID_REQUEST, exceeded.message))
            return
        fields = end_to_end(fields)
        version, modern = request_version(fields)
        if scope["method"] != "POST":
            await self._stream(scope, fields, modern, version, receive, send)
            return
        try:
            body = await read_body(receive, self.max_body, field(fields, b"content-length"))
        except BodyTooLarge:
            message = f"the request body is longer than {self.max_body} bytes"
            await self._refuse(send, 413, "body_too_large", error_body(None, _INVALID_REQUEST, message))
            return
        except ClientGone:
            return
        message = _decoded(body)
        method, request_id, params = _request_of(message)
        if not modern:
            if self.legacy == "reject":
                named = f"protocol version {version}" if version else "no MCP-Protocol-Version"
                text = f"legacy requests are not accepted here ({named}; this gate needs 2026-07-28)"
                await self._refuse(send, 400, "legacy", error_body(request_id, _INVALID_REQUEST, text))
                return
            if self.legacy == "strip":
                fields = without_params(fields)
            self._counts["legacy"] += 1
            await self._forward(scope, fields, body, method, request_id, params, None, receive, send)
            return
        identity = identity_of(fields)
        schema: Mapping[str, Any] | None = None
        if method == "tools/call" and isinstance(params.get("name"), str):
            name: str = params["name"]
            server = self._server(scope)
            known, schema = self.book.lookup(server, identity, name)
            if not known:
                if self.on_unknown == "reject":
                    text = f"the gate knows no schema for the tool {name!r}; the call was not forwarded"
                    await self._refuse(send, 400, "unknown_schema", error_body(request_id, _HEADER_MISMATCH, text))
                    return
                if self.on_unknown == "fetch":
                    failure = await self._learn_by_fetch(scope, fields, server, identity, message)
                    known, schema = self.book.lookup(server, identity, name)
                    if not known:
                        # Fail closed: a call whose schema could not be learned (here, or by the request whose
                        # fetch this one waited for) is not forwarded unchecked.
                        status, reason, text = failure or (502, "fetch_failed", "the gate could not learn the schema")
                        await self._refuse(send, status, reason, error_body(request_id, -32603, text))
                        return
                else:
                    self._counts["unknown_schema_passed"] += 1
        verdict = verify(as_text(fields), body, schema)
        if not verdict.ok:
            reason = f"mismatch:{verdict.header}"
            if self.mode == "verify":
                text = verdict.reason or f"the header {verdict.header} does not match the body"
                await self._refuse(send, 400, reason, error_body(request_id, _HEADER_MISMATCH, text))
                return
            self._counts["reported"] += 1
            self._counts[f"reported:{reason}"] += 1
            logger.info("gate: reported {} on {} (forwarded: report mode)", reason, method)
        elif self.policy is not None and method is not None:
            call = VerifiedCall(method=method, name=params.get("name"), params={}, identity=identity)
            try:
                self.policy(call)
            except GateRefusal as refusal:
                await self._refuse(
                    send, refusal.status, "policy", error_body(request_id, _INVALID_REQUEST, refusal.message)
                )
                return
        await self._forward(scope, fields, body, method, request_id, params, identity, receive, send)

    async def _stream(
        self, scope: Scope, fields: list[tuple[bytes, bytes]], modern: bool, version: str | None,
        receive: Receive, send: Send,
    ) -> None:
        # A request without a message (a GET stream, a DELETE): the legacy rule, then the app.
        if not modern:
            if self.legacy == "reject" and (version is not None or field(fields, b"mcp-session-id") is not None):
                text = f"legacy requests are not accepted here ({version or 'a legacy session'})"
                await self._refuse(send, 400, "legacy", error_body(None, _INVALID_REQUEST, text))
                return
            if self.legacy == "strip":
                fields = without_params(fields)
        self._counts["forwarded"] += 1
        sender = watched(
            send, method=None, request_id=None, page=False, learn_ttl=self.book.learn_ttl,
            learn=_ignore, forget=self._forgetting(scope, identity_of(fields)),
        )
        await self.app({**scope, "headers": fields}, receive, sender)

    async def _forward(
        self, scope: Scope, fields: list[tuple[bytes, bytes]], body: bytes, method: str | None, request_id: object,
        params: Mapping[str, Any], identity: str | None, receive: Receive, send: Send,
    ) -> None:
        self._counts["forwarded"] += 1
        sender = send
        if method is not None:
            server = self._server(scope)
            who = identity if identity is not None else identity_of(fields)

            async def learn(listing: Listing) -> None:
                await self.book.learn(server, who, listing, page=not listing.complete)
                self._counts["learned"] += 1

            sender = watched(
                send, method=method, request_id=request_id, page=params.get("cursor") is not None,
                learn_ttl=self.book.learn_ttl, learn=learn, forget=self._forgetting(scope, who),
            )
        await self.app({**scope, "headers": fields}, replayed(body, receive), sender)

    def _forgetting(self, scope: Scope, identity: str | None) -> Callable[[], Any]:
        async def forget() -> None:
            await self.book.forget(self._server(scope), identity)
            self._counts["forgotten"] += 1

        return forget

    async def _refuse(self, send: Send, status: int, reason: str, body: bytes) -> None:
        self._counts["rejected"] += 1
        self._counts[f"rejected:{reason}"] += 1
        await answer(send, status, body, _JSON)

    def _server(self, scope: Scope) -> str:
        return self._origin + scope.get("root_path", "") + scope["path"]

    # --- fetching a listing from the app ---------------------------------------------------------------------

    async def _learn_by_fetch(
        self, scope: Scope, fields: list[tuple[bytes, bytes]], server: str, identity: str | None, message: Any
    ) -> tuple[int, str, str] | None:
        # One tools/list (every page) from the wrapped app, as the caller: None when it answered, else the refusal.
        failure: list[tuple[int, str, str]] = []

        async def fetch() -> Listing | None:
            outcome = await self._fetch(scope, fields, message)
            if isinstance(outcome, tuple):
                failure.append(outcome)
                return None
            self._counts["fetched"] += 1
            return outcome

        await self.book.fill(server, identity, fetch)
        return failure[0] if failure else None

    async def _fetch(
        self, scope: Scope, fields: list[tuple[bytes, bytes]], message: Any
    ) -> Listing | tuple[int, str, str]:
        meta = {}
        params = message.get("params") if isinstance(message, dict) else None
        given = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(given, dict):
            meta = {key: value for key, value in given.items() if isinstance(key, str) and key.startswith(_META_PREFIX)}
        kept = {b"authorization", b"host", b"origin", b"mcp-protocol-version", b"user-agent"}
        base = [(name, value) for name, value in fields if name in kept]
        base += [
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
            (b"mcp-method", b"tools/list"),
        ]
        tools: list[Any] = []
        cursor: str | None = None
        result: dict[str, Any] = {}
        for _ in range(_MAX_PAGES):
            self._fetch_ids += 1
            request_id = f"mcpfsm-gate-{self._fetch_ids}"
            call_params: dict[str, Any] = {"_meta": meta} if meta else {}
            if cursor is not None:
                call_params["cursor"] = cursor
            body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": call_params})
            status, answer_headers, answer_body = await self._call_app(scope, base, body.encode())
            if status != 200:
                if status in (401, 403):
                    return status, "fetch_unauthorized", f"the server refused the gate's tools/list ({status})"
                return 502, "fetch_failed", f"the gate could not learn the tool's schema (tools/list: HTTP {status})"
            result_found = _result_of(answer_headers, answer_body, request_id)
            if result_found is None or not isinstance(result_found.get("tools"), list):
                return 502, "fetch_failed", "the gate could not learn the tool's schema (tools/list: no listing)"
            result = result_found
            tools.extend(result["tools"])
            next_cursor = result.get("nextCursor")
            if not isinstance(next_cursor, str) or not next_cursor:
                break
            cursor = next_cursor
        merged = {**result, "tools": tools}
        merged.pop("nextCursor", None)
        listing = listing_of(merged, learn_ttl=self.book.learn_ttl, complete=True)
        assert listing is not None
        return listing

    async def _call_app(
        self, scope: Scope, fields: list[tuple[bytes, bytes]], body: bytes
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        inner: dict[str, Any] = {
            key: scope[key] for key in ("type", "asgi", "http_version", "scheme", "server", "client", "root_path",
                                        "path", "raw_path", "state", "extensions") if key in scope
        }
        inner.update(method="POST", query_string=b"", headers=[*fields, (b"content-length", str(len(body)).encode())])
        sent = False
        start: Message = {}
        pieces: list[bytes] = []
        size = 0

        async def receive() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            # Nothing more will come; the app may wait for a disconnect that never does: it ends with its answer.
            import anyio

            await anyio.sleep_forever()
            raise AssertionError("unreachable")

        async def send(message: Message) -> None:
            nonlocal start, size
            if message["type"] == "http.response.start":
                start = message
            elif message["type"] == "http.response.body":
                size += len(message.get("body", b""))
                if size <= MAX_LEARNED:
                    pieces.append(message.get("body", b""))

        await self.app(inner, receive, send)
        return int(start.get("status", 500)), list(start.get("headers", [])), b"".join(pieces)


async def _ignore(listing: Listing) -> None:
    del listing


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(repr(a) for a in allowed)}, got {value!r}")


def _decoded(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def _request_of(message: Any) -> tuple[str | None, object, Mapping[str, Any]]:
    # (method, id, params) of a JSON-RPC request or notification; (None, None, {}) for anything else.
    if not isinstance(message, dict):
        return None, None, {}
    method = message.get("method")
    params = message.get("params")
    return (
        method if isinstance(method, str) else None,
        message.get("id"),
        params if isinstance(params, dict) else {},
    )


def _result_of(headers: list[tuple[bytes, bytes]], body: bytes, request_id: str) -> dict[str, Any] | None:
    # The result of the answer to request_id in a JSON body or an event stream, or None.
    kind = b""
    for name, value in headers:
        if name.lower() == b"content-type":
            kind = value.lower()
    messages: list[Any] = []
    if b"text/event-stream" in kind:
        from .._core.sse import SseError, SseParser

        try:
            events = SseParser(max_event_bytes=MAX_LEARNED).feed(body + b"\n\n")
        except SseError:
            return None
        for event in events:
            decoded = _decoded(event.data.encode())
            if decoded is not None:
                messages.append(decoded)
    else:
        decoded = _decoded(body)
        messages = decoded if isinstance(decoded, list) else [decoded]
    for message in messages:
        if isinstance(message, dict) and message.get("id") == request_id and isinstance(message.get("result"), dict):
            result: dict[str, Any] = message["result"]
            return result
    return None


def _preloaded(path: str | os.PathLike[str], learn_ttl: float) -> Listing:
    # schemas=PATH: a tools/list result, or a JSON-RPC response carrying one.
    with open(path, encoding="utf-8") as handle:
        try:
            value = json.load(handle)
        except ValueError as exc:
            raise ValueError(f"the schemas file {os.fspath(path)!r} is not JSON: {exc}") from None
    if isinstance(value, dict) and isinstance(value.get("result"), dict):
        value = value["result"]
    listing = listing_of(value, learn_ttl=learn_ttl, complete=False) if isinstance(value, dict) else None
    if listing is None:
        raise ValueError(
            f"the schemas file {os.fspath(path)!r} holds no tools/list result ({{\"tools\": [...]}})"
        )
    return Listing(tools=listing.tools, complete=False, public=True, ttl=float("inf"))

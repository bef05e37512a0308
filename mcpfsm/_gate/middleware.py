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
from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, Literal

from .._core.constants import HEADER_MISMATCH, INTERNAL_ERROR, INVALID_REQUEST
from .._core.gate import (
    DEFAULT_MAX_BODY,
    MAX_MCP_HEADERS,
    GateRefusal,
    Listing,
    McpHeaders,
    ParsedRequest,
    Refusal,
    ToolSchema,
    VerifiedCall,
    check,
    end_to_end,
    listing_from_body,
    parse_request,
    read_schemas,
    without_params,
)
from .._core.gate_edge import field, identity_of
from .._log import logger
from .asgi import App, BodyTooLarge, ClientGone, Message, Receive, Scope, Send, answer, read_body, replayed
from .book import Known, SchemaBook
from .listing import MAX_LEARNED, watched

__all__ = ["HeaderGate"]

Mode = Literal["verify", "report"]
OnUnknown = Literal["fetch", "pass", "reject"]
Legacy = Literal["strip", "pass", "reject"]

_JSON: Final = ((b"content-type", b"application/json"),)
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
        preload = _preloaded(schemas) if schemas is not None else None
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
        received = scope["headers"]
        headers = McpHeaders.read(received)
        exceeded = headers.limit_exceeded()
        if exceeded is not None:
            reason = "too_many_mcp_headers" if headers.count > MAX_MCP_HEADERS else "mcp_header_too_large"
            await self._refuse(send, Refusal(status=431, code=INVALID_REQUEST, message=exceeded), reason)
            return
        fields = end_to_end(received)
        if len(fields) != len(received) and any(name[:4].lower() == b"mcp-" for name, _ in received):
            headers = McpHeaders.read(fields)  # a field Connection named is not forwarded, so it is not judged
        if scope["method"] != "POST":
            await self._stream(scope, fields, headers, receive, send)
            return
        try:
            body = await read_body(receive, self.max_body, field(fields, b"content-length"))
        except BodyTooLarge:
            message = f"the request body is longer than {self.max_body} bytes"
            await self._refuse(send, Refusal(status=413, code=INVALID_REQUEST, message=message), "body_too_large")
            return
        except ClientGone:
            return
        request = parse_request(body)
        parsed = request if isinstance(request, ParsedRequest) else None
        request_id = parsed.id if parsed is not None else None
        if headers.legacy:
            if self.legacy == "reject":
                version = headers.protocol_version
                named = f"protocol version {version}" if version else "no MCP-Protocol-Version"
                text = f"legacy requests are not accepted here ({named}; this gate needs 2026-07-28)"
                await self._refuse(
                    send, Refusal(status=400, code=INVALID_REQUEST, message=text, id=request_id), "legacy"
                )
                return
            if self.legacy == "strip":
                fields = without_params(fields)
            self._counts["legacy"] += 1
            await self._forward(scope, fields, body, parsed, None, receive, send)
            return
        identity = identity_of(fields)
        schema: ToolSchema | None = None
        tool = parsed.tool if parsed is not None else None
        if tool is not None:
            server = self._server(scope)
            known, schema = self.book.lookup(server, identity, tool)
            if not known:
                if self.on_unknown == "reject":
                    text = f"the gate knows no schema for the tool {tool!r}; the call was not forwarded"
                    refusal = Refusal(status=400, code=HEADER_MISMATCH, message=text, id=request_id)
                    await self._refuse(send, refusal, "unknown_schema")
                    return
                if self.on_unknown == "fetch":
                    failure, listing = await self._learn_by_fetch(scope, fields, server, identity, parsed)
                    known, schema = listing.schema(tool) if listing is not None else (False, None)
                    if not known:
                        # Fail closed: a call whose schema could not be learned (here, or by the request whose
                        # fetch this one waited for) is not forwarded unchecked.
                        status, reason, text = failure or (502, "fetch_failed", "the gate could not learn the schema")
                        refusal = Refusal(status=status, code=INTERNAL_ERROR, message=text, id=request_id)
                        await self._refuse(send, refusal, reason)
                        return
                else:
                    self._counts["unknown_schema_passed"] += 1
        verdict = check(headers, request, schema)
        if not verdict.ok:
            reason = f"mismatch:{verdict.header}" if verdict.header else "malformed"
            if self.mode == "verify":
                await self._refuse(send, Refusal.of_verdict(verdict, request_id), reason)
                return
            self._counts["reported"] += 1
            self._counts[f"reported:{reason}"] += 1
            logger.info("gate: reported {} on {} (forwarded: report mode)", reason, parsed.method if parsed else None)
        elif self.policy is not None and parsed is not None:
            call = VerifiedCall(
                method=parsed.method, name=_verified_name(headers, parsed), params=verdict.params, identity=identity
            )
            try:
                self.policy(call)
            except GateRefusal as refusal:
                await self._refuse(send, Refusal.of_policy(refusal, request_id), "policy")
                return
        await self._forward(scope, fields, body, parsed, identity, receive, send)

    async def _stream(
        self, scope: Scope, fields: list[tuple[bytes, bytes]], headers: McpHeaders, receive: Receive, send: Send
    ) -> None:
        # A request without a message (a GET stream, a DELETE): the legacy rule, then the app.
        if headers.legacy:
            version = headers.protocol_version
            if self.legacy == "reject" and (version is not None or field(fields, b"mcp-session-id") is not None):
                text = f"legacy requests are not accepted here ({version or 'a legacy session'})"
                await self._refuse(send, Refusal(status=400, code=INVALID_REQUEST, message=text), "legacy")
                return
            if self.legacy == "strip":
                fields = without_params(fields)
        self._counts["forwarded"] += 1
        forget = self._forgetting(scope, identity_of(fields))
        sender = watched(send, method=None, request_id=None, learn=_ignore, forget=forget)
        await self.app({**scope, "headers": fields}, receive, sender)

    async def _forward(
        self,
        scope: Scope,
        fields: list[tuple[bytes, bytes]],
        body: bytes,
        parsed: ParsedRequest | None,
        identity: str | None,
        receive: Receive,
        send: Send,
    ) -> None:
        self._counts["forwarded"] += 1
        sender = send
        if parsed is not None:
            server = self._server(scope)
            who = identity if identity is not None else identity_of(fields)
            first = parsed.params.get("cursor") is None

            async def learn(listing: Listing) -> None:
                await self.book.learn(server, who, listing, first=first)
                self._counts["learned"] += 1

            forget = self._forgetting(scope, who)
            sender = watched(send, method=parsed.method, request_id=parsed.id, learn=learn, forget=forget)
        await self.app({**scope, "headers": fields}, replayed(body, receive), sender)

    def _forgetting(self, scope: Scope, identity: str | None) -> Callable[[], Awaitable[None]]:
        async def forget() -> None:
            await self.book.forget(self._server(scope), identity)
            self._counts["forgotten"] += 1

        return forget

    async def _refuse(self, send: Send, refusal: Refusal, reason: str) -> None:
        self._counts["rejected"] += 1
        self._counts[f"rejected:{reason}"] += 1
        await answer(send, refusal.status, refusal.body(), _JSON)

    def _server(self, scope: Scope) -> str:
        return f"{self._origin}{scope.get('root_path', '')}{scope['path']}"

    # --- fetching a listing from the app ---------------------------------------------------------------------

    async def _learn_by_fetch(
        self,
        scope: Scope,
        fields: list[tuple[bytes, bytes]],
        server: str,
        identity: str | None,
        parsed: ParsedRequest | None,
    ) -> tuple[tuple[int, str, str] | None, Known | None]:
        # One tools/list (every page) from the wrapped app, as the caller: what it taught, or why it failed.
        failure: list[tuple[int, str, str]] = []

        async def fetch() -> Listing | None:
            outcome = await self._fetch(scope, fields, parsed)
            if isinstance(outcome, tuple):
                failure.append(outcome)
                return None
            self._counts["fetched"] += 1
            return outcome

        known = await self.book.fill(server, identity, fetch)
        return (failure[0] if failure else None), known

    async def _fetch(
        self, scope: Scope, fields: list[tuple[bytes, bytes]], parsed: ParsedRequest | None
    ) -> Listing | tuple[int, str, str]:
        meta: dict[str, Any] = {}
        given = parsed.params.get("_meta") if parsed is not None else None
        if isinstance(given, Mapping):
            meta = {key: value for key, value in given.items() if isinstance(key, str) and key.startswith(_META_PREFIX)}
        base = [(name, value) for name, value in fields if name in _FETCH_FIELDS]
        base += [
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
            (b"mcp-method", b"tools/list"),
        ]
        tools: dict[str, ToolSchema] = {}
        first: Listing | None = None
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            self._fetch_ids += 1
            request_id = f"mcpfsm-gate-{self._fetch_ids}"
            params: dict[str, Any] = {"_meta": meta} if meta else {}
            if cursor is not None:
                params["cursor"] = cursor
            body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": params})
            status, kind, answered = await self._call_app(scope, base, body.encode())
            if status != 200:
                if status in (401, 403):
                    return status, "fetch_unauthorized", f"the server refused the gate's tools/list (HTTP {status})"
                return 502, "fetch_failed", f"the gate could not learn the tool's schema (tools/list: HTTP {status})"
            page = listing_from_body(answered, kind)
            if page is None:
                return 502, "fetch_failed", "the gate could not learn the tool's schema (tools/list: no listing)"
            first = first or page
            tools.update(page.tools)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert first is not None
        return Listing(tools=tools, ttl_ms=first.ttl_ms, cache_scope=first.cache_scope)

    async def _call_app(self, scope: Scope, fields: list[tuple[bytes, bytes]], body: bytes) -> tuple[int, str, bytes]:
        # One request to the wrapped app, in process: its status, Content-Type and body (at most MAX_LEARNED bytes).
        inner: dict[str, Any] = {key: scope[key] for key in _INNER_SCOPE if key in scope}
        inner.update(method="POST", query_string=b"", headers=[*fields, (b"content-length", str(len(body)).encode())])
        sent = False
        status = 500
        kind = ""
        pieces: list[bytes] = []
        size = 0

        async def receive() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            # Nothing more will come; an app that waits for the client to leave is ended with its answer.
            import anyio

            await anyio.sleep_forever()
            raise AssertionError("unreachable")

        async def send(message: Message) -> None:
            nonlocal status, kind, size
            if message["type"] == "http.response.start":
                status = int(message.get("status", 500))
                for name, value in message.get("headers", ()):
                    if name.lower() == b"content-type":
                        kind = value.decode("latin-1")
            elif message["type"] == "http.response.body":
                piece = message.get("body", b"")
                size += len(piece)
                if size <= MAX_LEARNED:
                    pieces.append(piece)

        await self.app(inner, receive, send)
        return status, kind, b"".join(pieces)


_FETCH_FIELDS: Final = frozenset({b"authorization", b"host", b"origin", b"mcp-protocol-version", b"user-agent"})
_INNER_SCOPE: Final = (
    "type",
    "asgi",
    "http_version",
    "scheme",
    "server",
    "client",
    "root_path",
    "path",
    "raw_path",
    "state",
    "extensions",
)


async def _ignore(listing: Listing) -> None:
    del listing


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(repr(a) for a in allowed)}, got {value!r}")


def _verified_name(headers: McpHeaders, parsed: ParsedRequest) -> str | None:
    # What Mcp-Name says once verified: the body's member (they are equal) when the method names something.
    name = parsed.name
    return str(name) if isinstance(name, str) and parsed.name_key is not None else None


def _preloaded(path: str | os.PathLike[str]) -> Listing:
    # schemas=PATH: a tools/list result, or a JSON-RPC response carrying one.
    with open(path, "rb") as handle:
        content = handle.read()
    try:
        return read_schemas(content)
    except ValueError as exc:
        raise ValueError(f"the schemas file {os.fspath(path)!r}: {exc}") from None
